#!/usr/bin/env python3
"""tokio's public surface against netloop's `tokio` crate (issue 40).

Lists every public path of tokio 1.54 (modules, types, functions, macros, enum
variants, public fields, methods and associated items of public types, trait items),
every trait impl (std's traits, tokio's own, `From`/`TryFrom` with the `Into`/`TryInto`
they give) and the auto traits (`Send`, `Sync`, `Unpin`, `UnwindSafe`, `RefUnwindSafe`,
with their conditions), with tokio's default cfg (no `tokio_unstable`) and features
`full` + `test-util`, and reports what `crates/tokio` (netloop under tokio's name, the
same features) lacks or has differently.

How it works: rustdoc's JSON output (nightly) for real tokio, from a scratch crate under
the target directory that depends on `tokio = "=1.54.1"`, and for every crate of
netloop that `crates/tokio` re-exports (rustdoc's JSON does not inline re-exports from
other crates, so the walk follows each `pub use` into the crate that defines the item).
Both trees are walked from the crate root. An item is named, in impls and signatures,
by a path tokio has, else its shortest (`tokio::netloop::*`, netloop's own API, last);
generic parameters are numbered and lifetimes all written `'_`, so the two sides
compare as text. tokio's `#[doc(hidden)]` items are out of scope; netloop's count,
since code can name them. `Drop` impls are not compared.

Run from anywhere (needs the nightly toolchain and tokio 1.54.1 in cargo's registry;
it builds into target/api-diff of this repository: about a minute on 2 cores and
about 250 MB of disk; delete it after):

    python3 tests/api-diff/api_diff.py                # build both, print the report
    python3 tests/api-diff/api_diff.py --no-build     # reuse the JSON of the last build
    python3 tests/api-diff/api_diff.py --signatures   # also functions whose signature differs
    python3 tests/api-diff/api_diff.py --extra        # also what only netloop's tokio has
    rm -rf target/api-diff

Options: `--tokio-version 1.54.1`, `--target-dir DIR`. The report gives the counts,
then: the entries missing from netloop's tokio, per category; auto traits netloop's
type lacks, has on other conditions, or has beyond tokio's (harmless); trait impls
whose bounds differ; tokio items not compared because netloop re-exports std's type
there (`fs::FileTimes`). docs/compatibility.md ("tokio's public surface: what netloop's
tokio lacks") has the judged list.
"""

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict, deque

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FEATURES = "full,test-util"
# The crates of netloop that crates/tokio's items come from, with the features the
# `tokio` crate builds them with (crates/tokio/Cargo.toml, features full + test-util).
NETLOOP_CRATES = [
    ("tokio", "--features", FEATURES),
    ("netloop", "--no-default-features", "--features", "tokio-names,test-util"),
    ("netloop-net", "--no-default-features", "--features", "tokio-names"),
    ("netloop-io",),
    ("netloop-sync",),
    ("netloop-scheduler", "--features", "test-util"),
    ("netloop-reactor",),
    ("netloop-macros",),
]
AUTO_TRAITS = {"Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"}
# Auto traits rustdoc synthesizes that stable code cannot name.
UNNAMEABLE_AUTO = {"Freeze", "UnsafeUnpin"}
STD_CRATES = {"core": "std", "alloc": "std", "std": "std"}


def run(cmd, cwd, env):
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=cwd, env=env, check=True)


def build(target_dir, version):
    """rustdoc JSON of real tokio and of netloop's crates, into target_dir."""
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir)
    # Hidden items too: rustdoc's JSON drops an item whose defining module is hidden
    # even where a public `use` names it (tokio's `net::UnixDatagram`); tokio's hidden
    # items are then left out by the walk, and netloop's count (they can be named).
    rustdoc = ["--", "-Z", "unstable-options", "--output-format", "json", "--document-hidden-items"]
    scratch = os.path.join(target_dir, "real")
    os.makedirs(os.path.join(scratch, "src"), exist_ok=True)
    with open(os.path.join(scratch, "Cargo.toml"), "w") as f:
        f.write(
            '[package]\nname = "api-diff-real"\nversion = "0.0.0"\nedition = "2021"\n'
            "publish = false\n\n[workspace]\n\n[dependencies]\n"
            f'tokio = {{ version = "={version}", features = ["full", "test-util"] }}\n'
        )
    with open(os.path.join(scratch, "src", "lib.rs"), "w") as f:
        f.write("")
    doc = os.path.join(target_dir, "doc")
    # The dependency's features come from the scratch manifest (cargo refuses
    # --features for a package outside the workspace).
    run(["cargo", "+nightly", "rustdoc", "-p", "tokio", *rustdoc], scratch, env)
    os.replace(os.path.join(doc, "tokio.json"), os.path.join(target_dir, "tokio-real.json"))
    out = os.path.join(target_dir, "netloop-json")
    os.makedirs(out, exist_ok=True)
    for pkg, *flags in NETLOOP_CRATES:
        run(["cargo", "+nightly", "rustdoc", "-p", pkg, *flags, *rustdoc], REPO, env)
        name = pkg.replace("-", "_")
        os.replace(os.path.join(doc, name + ".json"), os.path.join(out, name + ".json"))


class Crates:
    """A set of rustdoc JSON files, one per crate, with re-exports followed across them."""

    def __init__(self, files):
        self.docs = {}
        for path in files:
            with open(path) as f:
                d = json.load(f)
            name = d["index"][str(d["root"])]["name"]
            self.docs[name] = d
        # Each crate's own items by path, to resolve another crate's reference to them.
        self.by_path = {}
        for name, d in self.docs.items():
            table = {}
            for id_, p in d["paths"].items():
                if p["crate_id"] == 0:
                    table.setdefault(tuple(p["path"]), id_)
            self.by_path[name] = table

    def item(self, key):
        crate, id_ = key
        return self.docs[crate]["index"].get(str(id_))

    def resolve(self, crate, id_):
        """The (crate, id) that defines the item `id_` of `crate` names, if loaded, else
        its external path as a tuple (for std's and other crates' items)."""
        if id_ is None:
            return None
        d = self.docs[crate]
        it = d["index"].get(str(id_))
        if it is not None and it["crate_id"] == 0:
            return (crate, str(id_))
        p = d["paths"].get(str(id_))
        if p is None:
            if it is not None and it.get("name"):
                return ("?", it["name"])
            return None
        ext = crate if p["crate_id"] == 0 else d["external_crates"][str(p["crate_id"])]["name"]
        if ext in self.docs:
            target = self.by_path[ext].get(tuple(p["path"]))
            if target is not None:
                return (ext, target)
        path = list(p["path"])
        path[0] = STD_CRATES.get(path[0], path[0])
        return tuple(path)


class Surface:
    """The public surface of one `tokio` crate: path -> (kind, detail)."""

    def __init__(self, crates, skip_hidden, prefer=()):
        self.c = crates
        self.skip_hidden = skip_hidden
        self.prefer = set(prefer)
        self.public = {}  # (crate, id) -> the path that names it in impls and signatures
        self.entries = {}  # path -> (category, detail)
        self.walk()
        self.collect_impls()

    # -- paths -------------------------------------------------------------------

    def add(self, path, category, detail=""):
        self.entries.setdefault(path, (category, detail))

    def walk(self):
        root = ("tokio", str(self.c.docs["tokio"]["root"]))
        queue = deque([(root, "tokio")])
        seen = set()
        found = defaultdict(list)  # item -> every public path that names it
        while queue:
            key, path = queue.popleft()
            if (key, path) in seen or path.count("::") > 8:
                continue
            seen.add((key, path))
            for child in self.c.item(key)["inner"]["module"]["items"]:
                for ckey, name in self.children(key[0], child):
                    if isinstance(ckey, tuple) and len(ckey) == 2 and ckey[0] in self.c.docs:
                        cpath = f"{path}::{name}"
                        item = self.c.item(ckey)
                        kind = next(iter(item["inner"]))
                        if kind == "module":
                            queue.append((ckey, cpath))
                            self.add(cpath, "module")
                        else:
                            found[ckey].append(cpath)
                    else:
                        # A re-export of std's or another crate's item.
                        target = "::".join(ckey) if ckey else "?"
                        self.add(f"{path}::{name}", "re-export", f"= {target}")
        # An item's name in signatures and impls: a path the other side has (`prefer`),
        # then the shortest; `tokio::netloop::*` (netloop's own API, a second name for
        # every item) only when there is no other.
        for key, paths in found.items():
            paths.sort(key=lambda p: (p not in self.prefer, p.startswith("tokio::netloop::"), p.count("::"), p))
            self.visit(key, self.c.item(key), paths[0])
            for p in paths[1:]:
                self.add(p, next(iter(self.c.item(key)["inner"])))

    def children(self, crate, id_):
        """(key, name) for a module member, following `use` items (and globs)."""
        it = self.c.docs[crate]["index"].get(str(id_))
        if it is None or self.hidden(it):
            return []
        inner = it["inner"]
        if "use" not in inner:
            return [((crate, str(id_)), it["name"])]
        use = inner["use"]
        target = self.c.resolve(crate, use["id"])
        if use["is_glob"]:
            if isinstance(target, tuple) and len(target) == 2 and target[0] in self.c.docs:
                t = self.c.item(target)
                if t and "module" in t["inner"]:
                    out = []
                    for child in t["inner"]["module"]["items"]:
                        out.extend(self.children(target[0], child))
                    return out
            return []
        return [(target, use["name"])]

    def hidden(self, item):
        return self.skip_hidden and any(a == {"other": "#[doc(hidden)]"} for a in item["attrs"])

    def visit(self, key, item, path):
        inner = item["inner"]
        kind = next(iter(inner))
        if kind in ("use",):
            return
        self.public[key] = path
        if kind == "function":
            self.add(path, "function", ("fn", key))
        elif kind in ("struct", "enum", "union"):
            self.add(path, kind)
            if kind == "enum":
                for v in inner["enum"]["variants"]:
                    vit = self.c.item((key[0], str(v)))
                    if self.hidden(vit):
                        continue
                    self.add(f"{path}::{vit['name']}", "variant")
            if kind == "struct":
                k = inner["struct"]["kind"]
                if isinstance(k, dict) and "plain" in k:
                    for fid in k["plain"]["fields"]:
                        fit = self.c.item((key[0], str(fid)))
                        if fit and fit["visibility"] == "public":
                            self.add(f"{path}.{fit['name']}", "field")
        elif kind == "trait":
            self.add(path, "trait")
            for m in inner["trait"]["items"]:
                mit = self.c.item((key[0], str(m)))
                if self.hidden(mit):
                    continue
                mkind = next(iter(mit["inner"]))
                # Whether an implementor must write it: an item netloop requires and
                # tokio provides breaks every impl written for tokio.
                m = mit["inner"][mkind]
                provided = m.get("has_body", m.get("value", m.get("type")) is not None)
                self.add(f"{path}::{mit['name']}", "trait " + mkind.replace("function", "method"),
                         "provided" if provided else "required")
        else:
            self.add(path, kind)

    # -- impls -------------------------------------------------------------------

    def collect_impls(self):
        named = set(self.public)
        for crate, d in self.c.docs.items():
            for id_, it in d["index"].items():
                if it["crate_id"] != 0 or "impl" not in it["inner"]:
                    continue
                im = it["inner"]["impl"]
                if im["blanket_impl"] is not None or self.hidden(it):
                    continue  # std's blanket impls (From<T> for T, Any...), on every type
                self_key = self.type_key(crate, im["for"])
                trait_key = self.c.resolve(crate, im["trait"]["id"]) if im["trait"] else None
                self_public = self_key in named
                trait_public = trait_key in named
                r = Render(self, crate, im)
                self_ty = r.ty(im["for"])
                if not (self_public or trait_public):
                    # A std trait for a foreign type that names one of tokio's
                    # (`From<JoinError> for io::Error`).
                    if im["trait"] is None or not self.mentions(crate, [im["trait"], im["for"]], named):
                        continue
                if im["trait"] is None:
                    if not self_public:
                        continue
                    for m in im["items"]:
                        mit = d["index"].get(str(m))
                        if mit is None or mit["visibility"] != "public" or self.hidden(mit):
                            continue
                        mkind = next(iter(mit["inner"]))
                        cat = {"function": "method", "assoc_const": "assoc const", "assoc_type": "assoc type"}.get(mkind, mkind)
                        detail = ("fn", (crate, str(m)), im) if mkind == "function" else ""
                        self.add(f"{self_ty}::{mit['name']}", cat, detail)
                    continue
                trait = r.path(im["trait"])
                tname = trait.split("<")[0].split("::")[-1]
                if tname in UNNAMEABLE_AUTO or tname == "Drop":
                    continue  # Drop: no caller names it
                neg = "!" if im["is_negative"] else ""
                if tname in AUTO_TRAITS:
                    # Written or derived by the compiler, the same to a caller; the
                    # conditions matter: keyed by trait, compared whole.
                    self.add(f"impl {tname} for {self_ty}", "auto trait", f"{neg}{tname}{r.where_clause()}")
                else:
                    self.add(f"impl {neg}{trait} for {self_ty}", "trait impl", r.where_clause())
                    base = trait.split("<")[0]
                    if base in ("std::convert::From", "std::convert::TryFrom"):
                        # std's blanket impls make `From<A> for B` an `Into<B> for A`
                        # (and `TryFrom` a `TryInto`), which tokio writes out at times.
                        source = r.ty(im["trait"]["args"]["angle_bracketed"]["args"][0]["type"])
                        into = base.replace("From", "Into")
                        self.add(f"impl {into}<{self_ty}> for {source}", "trait impl", r.where_clause())

    def mentions(self, crate, node, named):
        """Whether a piece of rustdoc JSON names one of the public items."""
        if isinstance(node, dict):
            if "id" in node and "path" in node and self.c.resolve(crate, node["id"]) in named:
                return True
            return any(self.mentions(crate, v, named) for v in node.values())
        if isinstance(node, list):
            return any(self.mentions(crate, v, named) for v in node)
        return False

    def type_key(self, crate, ty):
        if "resolved_path" in ty:
            return self.c.resolve(crate, ty["resolved_path"]["id"])
        return None

    def name_of(self, crate, id_, written):
        key = self.c.resolve(crate, id_)
        if key in self.public:
            return self.public[key]
        if isinstance(key, tuple) and key and key[0] not in self.c.docs and key[0] != "?":
            return "::".join(key)
        if isinstance(key, tuple) and len(key) == 2 and key[0] in self.c.docs:
            # An item of a loaded crate with no public path under tokio.
            p = self.c.docs[key[0]]["paths"].get(key[1])
            return "::".join(p["path"]) if p else written
        return written


class Render:
    """Types, bounds and signatures as text, generic names numbered by position."""

    def __init__(self, surface, crate, impl=None):
        self.s = surface
        self.crate = crate
        self.names = {}
        self.impl = impl
        if impl is not None:
            self.number(impl["generics"])

    def number(self, generics):
        for p in generics["params"]:
            n = p["name"]
            if n not in self.names and not n.startswith("impl ") and not n.startswith("'"):
                self.names[n] = f"T{len(self.names)}"

    def gname(self, n):
        if n == "Self" and self.impl is not None and self.impl["trait"] is None:
            return self.ty(self.impl["for"])
        # Lifetimes are all `'_`: their names and their outlives bounds are left out.
        if n.startswith("'") and n != "'static":
            return "'_"
        return self.names.get(n, n)

    def path(self, p):
        name = self.s.name_of(self.crate, p["id"], p["path"])
        args = self.args(p.get("args"))
        if name == "std::io::error::Result" and args and "," not in args:
            # `io::Result<T>` is `Result<T, io::Error>`.
            return f"std::result::Result{args[:-1]}, std::io::error::Error>"
        return name + args

    def args(self, a):
        if not a:
            return ""
        if "angle_bracketed" in a:
            ab = a["angle_bracketed"]
            parts = [self.arg(x) for x in ab["args"]]
            parts += [self.constraint(x) for x in ab["constraints"]]
            parts = [x for x in parts if x]
            return f"<{', '.join(parts)}>" if parts else ""
        if "parenthesized" in a:
            pa = a["parenthesized"]
            out = f"({', '.join(self.ty(t) for t in pa['inputs'])})"
            if pa["output"] is not None:
                out += f" -> {self.ty(pa['output'])}"
            return out
        return ""

    def arg(self, x):
        if x == "infer":
            return "_"
        if "lifetime" in x:
            return self.gname(x["lifetime"])
        if "type" in x:
            return self.ty(x["type"])
        if "const" in x:
            return x["const"].get("expr", "const")
        return "?"

    def constraint(self, c):
        b = c["binding"]
        if "equality" in b:
            t = b["equality"]
            val = self.ty(t["type"]) if "type" in t else str(t.get("constant", {}).get("expr", "?"))
            return f"{c['name']} = {val}"
        return f"{c['name']}: {self.bounds(b['constraint'])}"

    def bounds(self, bs):
        out = []
        for b in bs:
            if "trait_bound" in b:
                tb = b["trait_bound"]
                m = {"maybe": "?", "maybe_const": "~const "}.get(tb["modifier"], "")
                out.append(m + self.path(tb["trait"]))
            elif "outlives" in b:
                out.append(self.gname(b["outlives"]))
            # `+ use<..>` (precise capturing) is left out.
        return " + ".join(sorted(out))

    def ty(self, t):
        if t == "infer":
            return "_"
        k, v = next(iter(t.items()))
        if k == "resolved_path":
            return self.path(v)
        if k == "generic":
            return self.gname(v)
        if k == "primitive":
            return v
        if k == "tuple":
            return f"({', '.join(self.ty(x) for x in v)})"
        if k == "slice":
            return f"[{self.ty(v)}]"
        if k == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if k == "borrowed_ref":
            lt = v["lifetime"]
            lt = f"{self.gname(lt)} " if lt and self.gname(lt) != "'_" else ""
            return f"&{lt}{'mut ' if v['is_mutable'] else ''}{self.ty(v['type'])}"
        if k == "raw_pointer":
            return f"*{'mut' if v['is_mutable'] else 'const'} {self.ty(v['type'])}"
        if k == "dyn_trait":
            parts = [self.path(p["trait"]) for p in v["traits"]]
            if v.get("lifetime"):
                parts.append(self.gname(v["lifetime"]))
            return f"dyn {' + '.join(parts)}"
        if k == "impl_trait":
            return f"impl {self.bounds(v)}"
        if k == "qualified_path":
            tr = f" as {self.path(v['trait'])}" if v.get("trait") else ""
            return f"<{self.ty(v['self_type'])}{tr}>::{v['name']}"
        if k == "function_pointer":
            sig = v["sig"]
            out = f"fn({', '.join(self.ty(x[1]) for x in sig['inputs'])})"
            if sig["output"] is not None:
                out += f" -> {self.ty(sig['output'])}"
            return out
        return k

    def where_clause(self, generics=None, more=None):
        g = generics if generics is not None else self.impl["generics"]
        params = g["params"] + (more["params"] if more else [])
        where = g["where_predicates"] + (more["where_predicates"] if more else [])
        preds = []
        for p in params:
            kind = p["kind"]
            if "type" in kind and kind["type"]["bounds"] and not kind["type"]["is_synthetic"]:
                preds.append(f"{self.gname(p['name'])}: {self.bounds(kind['type']['bounds'])}")
        for w in where:
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                if bp["bounds"]:
                    preds.append(f"{self.ty(bp['type'])}: {self.bounds(bp['bounds'])}")
            elif "eq_predicate" in w:
                preds.append("eq")
        # `T: A` and `T: B` written apart or together read the same.
        merged = defaultdict(set)
        for p in preds:
            lhs, rhs = p.split(": ", 1)
            merged[lhs].update(x.strip() for x in rhs.split(" + "))
        return "".join(f" where {lhs}: {' + '.join(sorted(b))}" for lhs, b in sorted(merged.items()))

    def signature(self, fn):
        """A function's signature without its name: the part a caller relies on."""
        f = fn["inner"]["function"]
        self.number(f["generics"])
        h = f["header"]
        quals = ("const " if h["is_const"] else "") + ("unsafe " if h["is_unsafe"] else "")
        params = ", ".join(self.ty(t) for _, t in f["sig"]["inputs"])
        out = f"{quals}fn({params})"
        ret = self.ty(f["sig"]["output"]) if f["sig"]["output"] is not None else None
        if h["is_async"]:
            # `async fn f() -> T` is `fn f() -> impl Future<Output = T>` to a caller.
            ret = f"impl std::future::future::Future<Output = {ret or '()'}>"
        if ret is not None:
            out += f" -> {ret}"
        # The method's bounds and those of the impl block it is in, as one set.
        impl_generics = self.impl["generics"] if self.impl is not None and self.impl["trait"] is None else None
        return out + self.where_clause(f["generics"], impl_generics)


def signature(surface, detail):
    if not isinstance(detail, tuple):
        return detail
    if detail[0] == "fn" and len(detail) == 2:
        key = detail[1]
        return Render(surface, key[0]).signature(surface.c.item(key))
    key, impl = detail[1], detail[2]
    return Render(surface, key[0], impl).signature(surface.c.item(key))


ORDER = ["module", "struct", "enum", "union", "trait", "function", "macro", "proc_macro",
         "re-export", "type_alias", "constant", "static", "variant", "field", "method",
         "assoc const", "assoc type", "trait method", "trait assoc_type", "trait assoc_const",
         "trait impl", "auto trait"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--signatures", action="store_true")
    ap.add_argument("--extra", action="store_true")
    ap.add_argument("--tokio-version", default="1.54.1")
    ap.add_argument("--target-dir", default=os.path.join(REPO, "target", "api-diff"))
    a = ap.parse_args()
    td = os.path.abspath(a.target_dir)
    if not a.no_build:
        build(td, a.tokio_version)
    real = Surface(Crates([os.path.join(td, "tokio-real.json")]), skip_hidden=True)
    njson = os.path.join(td, "netloop-json")
    ours = Surface(Crates([os.path.join(njson, f) for f in sorted(os.listdir(njson))]), skip_hidden=False, prefer=real.entries)

    def category_order(c):
        return ORDER.index(c) if c in ORDER else len(ORDER)

    # A type netloop re-exports from std (`fs::FileTimes`): its methods and impls are
    # std's, which the walk does not read.
    reexported = {p for p, (c, _) in ours.entries.items() if c == "re-export"}

    def owner(path):
        """The type a member, impl or auto trait entry belongs to."""
        if path.startswith("impl "):
            return path.split(" for ", 1)[1].split("<")[0]
        return path.split("<")[0].rsplit("::", 1)[0]

    missing, not_compared = defaultdict(list), []
    auto_less, auto_more, auto_other, bound_diff, sig_diff = [], [], [], [], []
    for path, (cat, detail) in real.entries.items():
        if path not in ours.entries:
            if owner(path) in reexported:
                not_compared.append(path)
            elif cat == "auto trait" and detail.startswith("!"):
                pass  # handled from netloop's side below
            else:
                missing[cat].append(path)
            continue
        ocat, odetail = ours.entries[path]
        if cat == "auto trait" and detail != odetail:
            if detail.startswith("!"):
                auto_more.append((path, detail, odetail))
            elif odetail.startswith("!"):
                auto_less.append((path, detail, odetail))
            else:
                auto_other.append((path, detail, odetail))
        elif cat.startswith("trait ") and cat != "trait impl" and detail != odetail:
            bound_diff.append((path, detail, odetail))
        elif cat == "trait impl" and detail != odetail:
            bound_diff.append((path, detail, odetail))
        elif a.signatures and isinstance(detail, tuple) and isinstance(odetail, tuple):
            s1, s2 = signature(real, detail), signature(ours, odetail)
            if s1 != s2:
                sig_diff.append((path, s1, s2))
    for path, (cat, detail) in ours.entries.items():
        # An auto trait tokio does not list for a type it has: tokio's is negative.
        if cat == "auto trait" and path not in real.entries and owner(path) in real.entries:
            if not detail.startswith("!"):
                auto_more.append((path, "(not listed)", detail))

    for path, (cat, detail) in ours.entries.items():
        # An item an implementor of tokio's trait does not write, which netloop's requires.
        if cat.startswith("trait ") and cat != "trait impl" and detail == "required" \
                and path not in real.entries and path.rsplit("::", 1)[0] in real.entries:
            missing["required trait item netloop adds"].append(path)
    nmiss = sum(len(v) for v in missing.values())
    per_cat = defaultdict(int)
    for _, (cat, _) in real.entries.items():
        per_cat[cat] += 1
    print(f"# tokio {a.tokio_version} (full, test-util) against netloop's tokio\n")
    print(f"tokio's public entries: {len(real.entries)}; missing from netloop's tokio: {nmiss}; "
          f"auto traits netloop lacks or narrows: {len(auto_less)}, with other conditions: "
          f"{len(auto_other)}, netloop has beyond tokio's: {len(auto_more)}; trait impls with "
          f"other bounds: {len(bound_diff)}; not compared (std's type on netloop's side): "
          f"{len(not_compared)}")
    print("\nper category (tokio / missing): " + ", ".join(
        f"{c} {per_cat[c]}/{len(missing.get(c, []))}" for c in sorted(per_cat, key=category_order)))
    for cat in sorted(missing, key=category_order):
        print(f"\n## missing: {cat} ({len(missing[cat])})\n")
        for p in sorted(missing[cat]):
            print(f"- {p}")
    for title, rows in [
        ("auto traits tokio's type has and netloop's lacks (tokio | netloop)", auto_less),
        ("auto traits on other conditions (tokio | netloop)", auto_other),
        ("auto traits netloop's type has beyond tokio's (harmless: tokio | netloop)", auto_more),
        ("trait impls whose bounds differ, trait items required on one side only (tokio | netloop)", bound_diff),
    ]:
        if rows:
            print(f"\n## {title}: {len(rows)}\n")
            for p, d1, d2 in sorted(rows):
                print(f"- {p}: {d1 or '(no bounds)'} | {d2 or '(no bounds)'}")
    if not_compared:
        print(f"\n## not compared: netloop re-exports std's type ({len(not_compared)})\n")
        for p in sorted(not_compared):
            print(f"- {p}")
    if sig_diff:
        print(f"\n## signatures that differ ({len(sig_diff)}): tokio | netloop\n")
        for p, s1, s2 in sorted(sig_diff):
            print(f"- {p}\n    tokio:   {s1}\n    netloop: {s2}")
    if a.extra:
        extra = [p for p, (c, _) in ours.entries.items()
                 if p not in real.entries and not p.startswith("tokio::netloop") and c != "auto trait"]
        print(f"\n## in netloop's tokio only ({len(extra)})\n")
        for p in sorted(extra):
            print(f"- {p} ({ours.entries[p][0]})")


if __name__ == "__main__":
    main()
