# Sourced by the benchmark scripts (run from Benchmarks/): prints the run's header — when, on what,
# at which commit (marked when the tree has local changes), and the load before the run.
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -sr)"
echo "commit:  $(git -C .. log -1 --format='%h %s' | cut -c1-100)$(git -C .. diff --quiet HEAD -- || echo ' (with local changes)')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min before the run; the machine may be shared)"
