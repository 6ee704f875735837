# Sourced by the HTTP benchmark scripts (benches/compat/run.sh, benches/patch-mode/run.sh):
# one measured window of a server under `wrk`.
#
#   wrk_window PORT PATH SECONDS SERVER_CMD...   -> prints "requests ticks"
#
# Starts SERVER_CMD in the background (it must become the server process itself, e.g.
# `taskset -c 1 BIN ...`, so that `$!` is the server's pid), waits for PORT to accept,
# warms it up with 1 s of load, then runs `wrk -t1 -c64` on core 0 for SECONDS against
# PATH and prints the requests wrk counted and the server process's CPU ticks
# (utime + stime, all its threads) over that window; then stops the server.

wrk_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

wrk_window() {
    local port=$1 path=$2 seconds=$3
    shift 3
    "$@" > /dev/null &
    local pid=$!
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
    timeout 10 taskset -c 0 wrk -t1 -c64 -d1s "http://127.0.0.1:$port$path" > /dev/null
    local before after out
    before=$(wrk_cpu_ticks "$pid")
    out=$(timeout $((seconds + 10)) taskset -c 0 wrk -t1 -c64 -d"${seconds}s" "http://127.0.0.1:$port$path")
    after=$(wrk_cpu_ticks "$pid")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    echo "$(echo "$out" | awk '/requests in/ {print $1}') $((after - before))"
}
