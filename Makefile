# rdmasock top-level Makefile.  `make help` lists the targets.
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
CACHE := $(BUILD)/cache
SHELL := /bin/bash

# Kernels: every supported Debian kernel with headers installed (6.1 and 6.12), or KVER=<release>.
SUPPORTED_KVERS := $(shell . $(TOP)/selftests/vm/kernels.sh; for k in 6.1 6.12; do \
	v=$$(rdmasock_kver $$k) && [ -d /lib/modules/$$v/build ] && echo $$v; done)
ifneq ($(KVER),)
KVERS := $(KVER)
else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
KVERS := $(sort $(shell uname -r) $(SUPPORTED_KVERS))
else
KVERS := $(SUPPORTED_KVERS)
endif

HARNESS := $(CACHE)/selftests/kselftest_harness.h
CHECKPATCH := $(CACHE)/scripts/checkpatch.pl

VERSION := $(shell cat $(TOP)/VERSION)
# make install: PREFIX for the tools (the module goes to /lib/modules/KVER/updates), DESTDIR to stage.
PREFIX ?= /usr/local
DESTDIR ?=
DKMS_SRC := $(DESTDIR)/usr/src/rdmasock-$(VERSION)

.PHONY: all modules userlib selftests deps lint check check-debug soak demo bench bench-wire clean help \
	install uninstall install-dkms deb check-install
all: modules userlib selftests

help:
	@echo "make            build rdmasock.ko for: $(KVERS); the userlib; the selftests"
	@echo "make KVER=x     build the module for one kernel release"
	@echo "make deps       install build/test dependencies with apt (idempotent)"
	@echo "make lint       W=1 -Werror, sparse, checkpatch --strict and the layer check on both kernels"
	@echo "make check      every selftest in the VM on 6.1 and 6.12, and a subset on the debug kernel"
	@echo "                (CHECK_KERNELS=\"6.1 6.12\" without the debug kernel)"
	@echo "make check-debug  every selftest on a KASAN+lockdep+kmemleak kernel (built once)"
	@echo "make demo       run an unchanged TCP program pair over rdmasock in the VM"
	@echo "make soak       1,000 connections, the stress suite, an hour of the concurrent fuzzer and"
	@echo "                the mutating peer on the debug kernel (SOAK_MINUTES, SOAK_KERNEL)"
	@echo "make bench      rdmasock vs TCP vs raw verbs in one VM run (table, JSON, plot)"
	@echo "make bench-wire TCP, rsockets, SMC-R (6.12) and rdmasock side by side across two VMs'"
	@echo "                wire, 6.1 and 6.12: ping-pong (and busy-polling), streams, set-up, redis,"
	@echo "                CPU per round trip, MB, connection and request (JSON, plots)"
	@echo "make install    the module (for: $(KVERS); then depmod), the tools, their man pages and"
	@echo "                /etc/modprobe.d/rdmasock.conf (PREFIX=$(PREFIX), DESTDIR); make uninstall"
	@echo "make install-dkms  the module's source and dkms.conf in /usr/src/rdmasock-$(VERSION)"
	@echo "make deb        Debian packages rdmasock-dkms and rdmasock-tools in build/deb, lintian-checked"
	@echo "make check-install  both packages installed in a fresh VM on 6.1 and 6.12: DKMS, modprobe,"
	@echo "                rdmasock-run iperf3 over RDMA, then apt-get remove --purge"

deps:
	@$(TOP)/selftests/deps.sh "$(CACHE)"

$(HARNESS) $(CHECKPATCH):
	@$(TOP)/selftests/deps.sh "$(CACHE)"

# --- kernel module, one build folder per kernel (sources symlinked, so objects never mix) ---------
modules: $(foreach k,$(KVERS),module-$(k))

module-%:
	@$(TOP)/kmod/build.sh "$*" "$(BUILD)/$*" $(if $(LINT),lint)

# --- userlib and selftests ------------------------------------------------------------------------
userlib:
	@$(MAKE) -s -C $(TOP)/userlib OUT=$(BUILD)/userlib

selftests: $(HARNESS) userlib
	@$(MAKE) -s -C $(TOP)/selftests OUT=$(BUILD)/selftests HARNESS_DIR=$(CACHE)/selftests

lint: $(CHECKPATCH)
	@set -e; for k in $(KVERS); do $(TOP)/kmod/build.sh "$$k" "$(BUILD)/lint-$$k" lint; \
		$(TOP)/kmod/layers.sh "$(BUILD)/lint-$$k/kmod"; done
	@$(CHECKPATCH) --strict --no-tree --quiet --terse --show-types --ignore SPDX_LICENSE_TAG \
		-f $(TOP)/kmod/*.c $(TOP)/kmod/*.h $(TOP)/kmod/probes/*.c $(TOP)/uapi/linux/*.h
	@echo "lint: clean on $(KVERS)"

# --- tests in the VM ------------------------------------------------------------------------------
# "debug": a subset on the KASAN + lockdep + kmemleak kernel, built on first use (~25 min, cached).
CHECK_KERNELS ?= 6.1 6.12 debug
check:
	@$(TOP)/selftests/deps.sh --if-missing "$(CACHE)"
	@$(MAKE) -s all
	@$(TOP)/selftests/check.sh $(CHECK_KERNELS)

demo:
	@$(TOP)/selftests/deps.sh --if-missing "$(CACHE)"
	@$(MAKE) -s all
	@$(TOP)/selftests/demo.sh

# The debug-kernel lane: KASAN, lockdep, kmemleak, list/object debugging (docs/testing.md): every
# test, one VM and two VMs.  `make check` runs a subset of it (selftests/check.sh).
check-debug:
	@$(TOP)/selftests/deps.sh --if-missing "$(CACHE)"
	@$(MAKE) -s userlib selftests
	@RDMASOCK_DEBUG_TESTS=all $(TOP)/selftests/check.sh debug

# Longer than make check affords, on the debug kernel by default (SOAK_KERNEL=6.1 or 6.12 for a
# Debian one); SOAK_MINUTES (60) of fuzzer and mutating-peer rounds.
SOAK_KERNEL ?= debug
SOAK_MINUTES ?= 60
soak:
	@$(TOP)/selftests/deps.sh --if-missing "$(CACHE)"
	@$(MAKE) -s all
	@if [ "$(SOAK_KERNEL)" = debug ]; then $(TOP)/selftests/debug-kernel/build.sh && \
		$(MAKE) -s KVER="$$(cat $(BUILD)/debug-kernel/current/release)" modules; fi
	@$(TOP)/selftests/vm/run --kernel $(SOAK_KERNEL) --mem 2048 \
		--timeout $$(( $(SOAK_MINUTES) * 60 + 2400 )) -- \
		env SOAK_MINUTES=$(SOAK_MINUTES) $(TOP)/selftests/soak.sh

bench:
	@$(TOP)/selftests/deps.sh --if-missing --bench "$(CACHE)"
	@$(MAKE) -s all
	@$(TOP)/selftests/bench/bench.sh

bench-wire:
	@$(TOP)/selftests/deps.sh --if-missing --bench "$(CACHE)"
	@$(MAKE) -s all
	@$(TOP)/selftests/bench/bench-wire.sh

# --- installing ----------------------------------------------------------------------------------
# The module through kbuild's modules_install (INSTALL_MOD_DIR=updates: it wins over an in-tree one),
# then depmod (not when staging into DESTDIR: the package manager runs it).  Unsigned: Debian's
# headers ask for every module to be signed with the kernel's own key, which only Debian has; for
# Secure Boot, the DKMS package signs with DKMS's MOK key (README, "Installing on an RDMA host").
install: modules userlib
	@set -e; for k in $(KVERS); do \
		kdir=$$(. $(TOP)/selftests/vm/kernels.sh; rdmasock_kdir $$k); \
		$(MAKE) -s -C "$$kdir" M=$(BUILD)/$$k INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates \
			CONFIG_MODULE_SIG_ALL= modules_install; \
		[ -n "$(DESTDIR)" ] || depmod -a $$k; done
	@$(MAKE) -s -C $(TOP)/userlib OUT=$(BUILD)/userlib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	@[ -e $(DESTDIR)/etc/modprobe.d/rdmasock.conf ] || \
		install -D -m 0644 $(TOP)/packaging/rdmasock.conf $(DESTDIR)/etc/modprobe.d/rdmasock.conf
	@echo "install: rdmasock $(VERSION) for $(KVERS), tools in $(DESTDIR)$(PREFIX)"

# (/etc/modprobe.d/rdmasock.conf stays if it was changed, as a package's conffile would.)
uninstall:
	@set -e; for k in $(KVERS); do \
		rm -f $(DESTDIR)/lib/modules/$$k/updates/rdmasock.ko*; \
		[ -n "$(DESTDIR)" ] || depmod -a $$k; done
	@$(MAKE) -s -C $(TOP)/userlib OUT=$(BUILD)/userlib uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	@cmp -s $(TOP)/packaging/rdmasock.conf $(DESTDIR)/etc/modprobe.d/rdmasock.conf && \
		rm -f $(DESTDIR)/etc/modprobe.d/rdmasock.conf || true

# What DKMS builds from: the module's sources, the feature probes, kmod/build.sh, dkms.conf.
install-dkms:
	@rm -rf $(DKMS_SRC)
	@install -d $(DKMS_SRC)/kmod/probes $(DKMS_SRC)/uapi/linux
	@install -m 0644 $(TOP)/Kbuild $(TOP)/VERSION $(DKMS_SRC)/
	@install -m 0644 $(TOP)/kmod/*.[ch] $(DKMS_SRC)/kmod/
	@install -m 0755 $(TOP)/kmod/build.sh $(DKMS_SRC)/kmod/
	@install -m 0644 $(TOP)/kmod/probes/*.c $(DKMS_SRC)/kmod/probes/
	@install -m 0644 $(TOP)/uapi/linux/*.h $(DKMS_SRC)/uapi/linux/
	@sed 's|@VERSION@|$(VERSION)|' $(TOP)/packaging/dkms.conf > $(DKMS_SRC)/dkms.conf
	@echo "install-dkms: $(DKMS_SRC) (then: dkms install rdmasock/$(VERSION))"

# Debian's own tooling on a copy of the tree; debian/changelog is written from VERSION there.
deb:
	@$(TOP)/selftests/deps.sh --if-missing --packaging "$(CACHE)"
	@$(TOP)/packaging/deb.sh "$(BUILD)/deb"

check-install: deb
	@$(TOP)/selftests/check-install.sh "$(BUILD)/deb"

clean:
	rm -rf $(BUILD)
