# tweetkeeper. Two halves in one file:
#  - the PostgreSQL extension, built by PGXS (this file re-invokes itself with TK_PGXS=1, because
#    PGXS needs pg_config, which a fresh machine only has after `make deps`);
#  - the project targets: build, install, installcheck (no root, no apt: the packages are yours to
#    provide), and deps, check, demo, bench, bench-shortage, bench-scale, bench-import,
#    bench-hostile, bench-adaptive, bench-partitions, bench-stream, soak, fuzz, which first install what is missing (as root, on
#    Debian 12).
EXTENSION := tweetkeeper
EXTVERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" tweetkeeper.control)

# (USE_PGXS=1, as Debian's pg_buildext and other PGXS callers say it: the extension alone.)
ifdef USE_PGXS
TK_PGXS := 1
endif
ifdef TK_PGXS
MODULE_big = tweetkeeper
OBJS = extension/tweetkeeper.o extension/pg_bridge.o extension/settings.o \
       extension/next_delay.o extension/bgworker.o extension/policy.o \
       extension/sessions.o extension/wakeup.o extension/post_url.o \
       extension/post_url_sql.o extension/history_codec.o extension/history_sql.o \
       extension/claim_heads.o extension/payload_sql.o extension/adaptive.o \
       extension/adaptive_sql.o
# The current version's install script and its upgrade scripts are built from the sources by
# scripts/build-sql.sh: sql/schema (what runs once) and sql/replaceable (functions, views,
# triggers, grants: one home each), an upgrade script being the hand-written delta
# sql/updates/A--$(EXTVERSION).sql followed by every replaceable definition. Released versions'
# scripts (sql/tweetkeeper--0.3.0.sql, sql/tweetkeeper--0.2.0--0.3.0.sql, ...) are frozen files,
# listed with their checksums in sql/RELEASED.
SQL_PARTS = $(sort $(wildcard sql/schema/*.sql sql/replaceable/*.sql))
SQL_UPDATES = $(wildcard sql/updates/*--$(EXTVERSION).sql)
SQL_UPGRADES_built = $(patsubst sql/updates/%,sql/$(EXTENSION)--%,$(SQL_UPDATES))
# The proxy database's extension (docs/partitions.md): SQL only, the same module's URL parsers.
PROXY_SQL = sql/$(EXTENSION)_proxy--$(EXTVERSION).sql
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql $(SQL_UPGRADES_built) $(PROXY_SQL)
DATA = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql)) $(EXTENSION)_proxy.control
EXTRA_CLEAN = $(DATA_built)
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
              -Wno-register -Wno-sign-compare
SHLIB_LINK = -lstdc++
PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
# PostgreSQL is built with JIT: PGXS also compiles each .cpp to bitcode with clang, which does
# not see PG_CXXFLAGS unless told.
COMPILE.cxx.bc += $(PG_CXXFLAGS) -Wno-unknown-warning-option

sql/$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS) scripts/build-sql.sh
	scripts/build-sql.sh install $(EXTVERSION) >$@.tmp && mv $@.tmp $@

sql/$(EXTENSION)--%--$(EXTVERSION).sql: sql/updates/%--$(EXTVERSION).sql $(SQL_PARTS) scripts/build-sql.sh
	scripts/build-sql.sh upgrade $* $(EXTVERSION) >$@.tmp && mv $@.tmp $@

$(PROXY_SQL): sql/replaceable/05_placing.sql $(wildcard sql/proxy/*.sql) scripts/build-sql.sh
	scripts/build-sql.sh proxy $(EXTVERSION) >$@.tmp && mv $@.tmp $@

else

JOBS ?= 2
BUILD_DIR ?= build
CMAKE_FLAGS ?=

# (deb, check-deb: the Debian packages and their install test in a fresh Debian 12.)
.PHONY: deb check-deb all deps build build-ext build-cpp first-programs install installcheck check demo bench bench-follow bench-shortage bench-scale bench-import bench-hostile bench-adaptive bench-partitions bench-stream soak fuzz clean

all: build

deps:
	@scripts/install-deps.sh

# The Debian packages postgresql-15-tweetkeeper and tweetkeeper-workers (debian/; into build/deb/),
# and the test that installs, uses, upgrades and purges them in a fresh Debian 12 (.ci/run runs it).
deb:
	@scripts/install-deps.sh deb
	scripts/make-deb.sh

check-deb: deb first-programs
	tests/deploy/deb_install.sh

build: build-ext build-cpp

# Without the packages, say which and how, rather than fail deep in PGXS or CMake.
build-ext:
	@command -v pg_config >/dev/null || { echo "make: pg_config not found: install postgresql-server-dev-15 (or run 'make deps' as root)" >&2; exit 1; }
	$(MAKE) TK_PGXS=1 -j$(JOBS)

build-cpp:
	@command -v cmake >/dev/null || { echo "make: cmake not found: install cmake and the packages README.md lists (or run 'make deps' as root)" >&2; exit 1; }
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD_DIR) -j$(JOBS)

# The extension goes into the system PostgreSQL (that is where CREATE EXTENSION looks), the
# worker and the mock API into /usr/local/bin (PREFIX to change).
PREFIX ?= /usr/local
install: build
	$(MAKE) TK_PGXS=1 install
	cmake --install $(BUILD_DIR) --prefix $(PREFIX) >/dev/null

# Every test against the extension as installed (make install), in throwaway clusters.
installcheck: build-cpp
	tests/run-all.sh

# Tests need the extension installed where the throwaway clusters find it. make check builds the
# extension and, at the same time, the programs the first suites run (CMake's target
# `first_programs`: the worker and the mock API); tests/run-all.sh builds the other programs and
# the instrumented tree (the unit tests, the fuzz targets) in the background while the first
# suites run.
check: deps
	$(MAKE) -j2 --output-sync=target build-ext first-programs
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/run-all.sh

first-programs:
	@command -v cmake >/dev/null || { echo "make: cmake not found: install cmake and the packages README.md lists (or run 'make deps' as root)" >&2; exit 1; }
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD_DIR) -j$(JOBS) --target first_programs

demo: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	scripts/demo.sh

bench: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/release_ab.sh
	# The claim's and completion's SQL against 0.3.0's, one library, backend CPU time.
	tests/bench/sql_ab.sh
	# Bluesky end to end with as many sessions as the floor's 4 clients (2 workers x 2), then with
	# twice as many (2 x 4): all its claims count requests of one endpoint's window.
	NETWORK=bluesky TWEETS=600000 FLOOR_SECONDS=15 CONCURRENCY=2 tests/bench/run.sh
	NETWORK=bluesky TWEETS=600000 FLOOR_SECONDS=15 CONCURRENCY=4 tests/bench/run.sh
	tests/bench/history.sh
	IDS=1000000 tests/bench/import.sh
	tests/bench/import.sh
	tests/bench/shortage.sh
	tests/bench/hostile.sh
	tests/bench/archive.sh
	tests/bench/export.sh
	# metrics_at() for a million posts at five ages, recent and compacted history (target 60 s).
	tests/bench/curves.sh
	# Following 1,000 accounts per network at 50 posts/s: latency, faults, exactly once (12 minutes).
	tests/bench/follow.sh

# Each network's claim latency at 100,000 and 10,000,000 tracked posts of every network, and the
# update from 0.3.0 on 10,000,000 (about 35 minutes, 6 GB of disk).
bench-scale: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/claim_scale.sh
	tests/bench/upgrade.sh

# Only the following scenario of make bench (about 12 minutes).
bench-follow: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/follow.sh

# Only the shortage scenario of make bench (about 4 minutes).
bench-shortage: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/shortage.sh

# tweetkeeper-import of 1,000,000 and of 10,000,000 ids from a file (about 2 minutes).
bench-import: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	IDS=1000000 tests/bench/import.sh
	tests/bench/import.sh

# The age table and the adaptive refresh policy over 100,000 posts' lives per network, on the
# mock's model and a second one, then the live system beside the replay (about 2 minutes).
bench-adaptive: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/adaptive.sh

# Partitions behind PL/Proxy (docs/partitions.md): CPU per refresh on one node and on two
# partitions, the proxy's (none: not in the path), and merged reads' cost (a few minutes).
bench-partitions: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/partitions.sh

# Stream counts (issue 52): 100,000 tracked Bluesky posts among 5,000 events a second of the
# network's other traffic for 10 minutes, the reader on one core, killed once, PostgreSQL restarted
# once (about 15 minutes).
bench-stream: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/stream.sh

# A hostile answer of the largest size accepted, a million keys, through payload_without_counts()
# (target under a second; about a minute).
bench-hostile: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/hostile.sh

# Steady refreshing with history kept for minutes; sizes every minute must stay flat
# (SOAK_MINUTES, 30 by default).
soak: deps
	$(MAKE) build
	$(MAKE) TK_PGXS=1 install >/dev/null
	tests/bench/soak.sh

# The long fuzz run (make check runs 20 s of it).
FUZZ_SECONDS ?= 600
fuzz: deps
	tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	-$(MAKE) TK_PGXS=1 clean 2>/dev/null
	rm -rf $(BUILD_DIR) build-instrumented build-fuzz build-asan

endif
