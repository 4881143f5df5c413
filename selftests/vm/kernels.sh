# Helpers shared by the Makefile and the VM runner: map a short kernel name to an installed Debian kernel.
# rdmasock_kver 6.1|6.12|debug|KVER -> full kernel release; rdmasock_vmlinuz KVER -> image path.
rdmasock_kver() {
	local want=$1 k
	case $want in
	debug) k=$(cat "${RDMASOCK_TOP:-.}/build/debug-kernel/current/release" 2>/dev/null) ;;
	6.1) k=$(ls -1 /lib/modules | grep -E '^6\.1\.[0-9]+-[0-9]+-amd64$' | sort -V | tail -n 1) ;;
	6.12) k=$(ls -1 /lib/modules | grep -E '^6\.12\.[0-9]+.*-amd64$' | sort -V | tail -n 1) ;;
	*) k=$want ;;
	esac
	[ -n "$k" ] && [ -e "/lib/modules/$k" -o "$want" = debug ] && echo "$k"
}
rdmasock_vmlinuz() {
	if [ -e "/boot/vmlinuz-$1" ]; then
		echo "/boot/vmlinuz-$1"
	else
		echo "${RDMASOCK_TOP:-.}/build/debug-kernel/current/bzImage"
	fi
}
# The kernel build tree to compile modules against.
rdmasock_kdir() {
	if [ -d "/lib/modules/$1/build" ]; then
		echo "/lib/modules/$1/build"
	else
		echo "${RDMASOCK_TOP:-.}/build/debug-kernel/current/src"
	fi
}
