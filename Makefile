# ducktail — build, run and test. Builds need cgo (gcc/g++) and the duckdb_arrow tag,
# which enables duckdb-go's Arrow interface (github.com/duckdb/duckdb-go/v2).
GO       ?= go
TAGS     := duckdb_arrow
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
FUZZTIME ?= 30s
export CGO_ENABLED := 1

.PHONY: build run test vet bench bench-data fuzz fuzz-ci ui clean test-js

## build: the ducktail binary in bin/
build:
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o bin/ducktail ./cmd/ducktail

## run: ducktail on the embedded default: ./data/ducktail.duckdb, TLS on :8443 with a
## self-signed certificate, the admin token printed once (and kept in ./data/admin.token)
run: build
	./bin/ducktail serve --data-dir ./data --addr :8443

## test: vet and every test (the Node.js and Chromium tests run when their packages are
## installed; .ci/run installs them and makes them required). gotestsum (a tool of go.mod)
## runs go test and ends with a summary: tests run, failed and skipped, each skip with
## the reason its test gave.
test: vet
	$(GO) tool gotestsum --format pkgname --format-hide-empty-pkg -- -race -tags $(TAGS) -count=1 -timeout 30m ./...
	$(MAKE) test-js

## test-js: the JavaScript client in clients/js: tsc builds dist/, then its Node.js tests
## run, against bin/ducktail serve among others. Skipped, saying so, without node or
## clients/js/node_modules (npm ci in clients/js), unless DUCKTAIL_REQUIRE_NODE=1 (CI)
test-js: build
	@if command -v node >/dev/null && [ -d clients/js/node_modules ]; then \
		cd clients/js && npm test; \
	elif [ "$$DUCKTAIL_REQUIRE_NODE" = 1 ]; then \
		echo "test-js: node or clients/js/node_modules is missing; run npm ci in clients/js (required: DUCKTAIL_REQUIRE_NODE=1)"; exit 1; \
	else \
		echo "test-js: SKIPPED, node or clients/js/node_modules is missing (npm ci in clients/js; DUCKTAIL_REQUIRE_NODE=1 to fail instead)"; \
	fi

## vet: go vet and staticcheck (a tool of go.mod, fetched with the modules)
vet:
	$(GO) vet -tags $(TAGS) ./...
	$(GO) tool staticcheck -tags $(TAGS) ./...

## bench: Go benchmarks (the stream-node ones in cmd/ducktail and jetstream run a 3-node
## NATS cluster in the test process, from the nats-server module); writes
## docs/benchmarks.md with the numbers and the method
bench: bench-data
	mkdir -p bin
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem -timeout 60m ./api ./store ./ingest ./jetstream ./cmd/ducktail | tee bin/bench.out
	scripts/bench-report.sh bin/bench.out > docs/benchmarks.md

## bench-data: the 3M-row flights Parquet file (vega-datasets 3.2.1, npm registry)
bench-data: testdata/bench/flights-3m.parquet
testdata/bench/flights-3m.parquet:
	mkdir -p testdata/bench
	cd testdata/bench && npm pack vega-datasets@3.2.1 --silent >/dev/null && tar -xzf vega-datasets-3.2.1.tgz package/data/flights-3m.parquet && mv package/data/flights-3m.parquet . && rm -rf package vega-datasets-3.2.1.tgz

## fuzz: each fuzz target for FUZZTIME (default 30s)
FUZZ_TARGETS := ./ingest:FuzzDecodeCSV ./ingest:FuzzDecodeJSON ./ingest:FuzzDecodeNDJSON ./ingest:FuzzDecodeArrow ./ingest:FuzzDecodeParquet \
	./store:FuzzCursorDecode ./stream:FuzzCheckLastEventID ./stream:FuzzSSEEncoding
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; done

## fuzz-ci: each fuzz target for a count of executions, so that corpus regressions fail
## CI; a count, not a duration, because Go 1.26's coordinator can fail a -fuzztime
## duration run with a bare "context deadline exceeded" when a worker is busy at the
## deadline (go.dev/issue/75804, fixed in Go 1.27)
fuzz-ci:
	$(MAKE) fuzz FUZZTIME=20000x

## ui: rebuild the live table page (served at /ui/) from web/ with Vite into api/ui/dist,
## which go:embed compiles into the binary; commit api/ui/dist with the change. Needs
## Node.js >= 20.19 and npm; web/package-lock.json pins every npm package, and `npm ci`
## there also installs what the Node.js and Chromium tests use. The page's stream code is
## the package in clients/js, built first.
ui:
	cd clients/js && npm ci && npm run build
	cd web && npm ci && npm run build

clean:
	rm -rf bin
