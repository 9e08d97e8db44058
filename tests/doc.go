// Package tests holds dfly's end-to-end tests: they build ./cmd/dfly, start
// it on a free port and talk to it over real sockets, the way clients do.
//
// The same tests run against a real redis-server when DFLY_TEST_TARGET=redis,
// which is how every expectation here is proven to be Redis's behaviour and
// not merely dfly's. Command behaviour lives in data-driven tables under
// testdata/ (see testdata/README.md); protocol edge cases, client libraries,
// redis-cli, authentication and concurrency invariants have their own tests.
//
//	go test ./tests/                               # dfly, built once per run
//	DFLY_TEST_TARGET=redis go test ./tests/        # redis-server on PATH
//	DFLY_BUILD_FLAGS=-race go test ./tests/        # dfly built with -race
//	DFLY_BIN=/path/to/dfly go test ./tests/        # a prebuilt dfly
//	DFLY_TEST_SEED=123 go test ./tests/ -run Concurrency
//	go test ./tests/ -run TestReplCheck -replcheck.runs 200   # replication checker, 200 seeds
//
// Harness: StartServer(t, flags...) starts a server and stops it at cleanup
// (its output is logged if the test failed, and a data race it reported,
// built with -race, fails the test); Server.Raw gives a RawConn that
// writes exact bytes and parses replies of either RESP version into a Reply
// with a canonical rendering; Server.Client and Server.ClientWith give
// go-redis clients.
//
// The package never imports dfly's internals: it tests the binary only.
package tests
