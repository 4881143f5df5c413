# Sourced by the trace-*.sh scripts (inside the VM): ftrace's function tracer on a list of
# functions, with system calls and scheduler events, on the monotonic clock.
t=/sys/kernel/tracing

# ftrace_start BUFFER_KB SYSCALL_FILTER "SCHED_EVENTS" FUNCTION...: functions this kernel lacks (or
# inlined) are left out rather than failing the filter.
ftrace_start() {
	local kb=$1 filter=$2 events=$3 f e
	shift 3
	mountpoint -q $t || mount -t tracefs nodev $t
	echo mono > $t/trace_clock
	echo "$kb" > $t/buffer_size_kb
	for f in "$@"; do
		echo "$f" >> $t/set_ftrace_filter 2> /dev/null || true
	done
	echo function > $t/current_tracer
	echo "$filter" > $t/events/raw_syscalls/filter
	echo 1 > $t/events/raw_syscalls/enable
	for e in $events; do
		echo 1 > "$t/events/sched/$e/enable"
	done
}

# ftrace_capture OUT COMMAND...: trace while COMMAND runs (its output to stdout), the trace to OUT.
ftrace_capture() {
	local out=$1
	shift
	echo > $t/trace
	echo 1 > $t/tracing_on
	"$@"
	echo 0 > $t/tracing_on
	cat $t/trace > "$out"
}

ftrace_stop() {
	local e
	echo nop > $t/current_tracer
	echo 0 > $t/events/raw_syscalls/enable
	for e in sched_switch sched_wakeup; do
		echo 0 > "$t/events/sched/$e/enable"
	done
	: > $t/set_ftrace_filter
}
