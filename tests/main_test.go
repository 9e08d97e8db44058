package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Environment variables understood by the suite.
const (
	// EnvTarget selects the server under test: "dfly" (default) or "redis".
	EnvTarget = "DFLY_TEST_TARGET"
	// EnvBinary points at a prebuilt dfly binary; the suite then skips its build.
	EnvBinary = "DFLY_BIN"
	// EnvBuildFlags adds flags to the go build of dfly, e.g. "-race".
	EnvBuildFlags = "DFLY_BUILD_FLAGS"
)

const (
	targetDfly  = "dfly"
	targetRedis = "redis"
)

var (
	target   = targetDfly
	dflyPath string // the built (or given) dfly binary
	buildErr error  // why dfly could not be built; tests that need it fail
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	switch t := os.Getenv(EnvTarget); t {
	case "", targetDfly:
	case targetRedis:
		target = targetRedis
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want %q or %q\n", EnvTarget, t, targetDfly, targetRedis)
		return 2
	}
	if target == targetDfly {
		dir, err := os.MkdirTemp("", "dfly-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer os.RemoveAll(dir)
		dflyPath, buildErr = buildDfly(dir)
	}
	return m.Run()
}

// buildDfly builds ./cmd/dfly into dir, or returns $DFLY_BIN when set.
// raceBuild reports whether the suite builds dfly with the race detector,
// which makes the server 5-10x slower: the slowest tests then use smaller
// datasets (the same paths, fewer keys and bytes) so that CI's -race pass
// of this package stays within its time budget.
func raceBuild() bool {
	return slices.Contains(strings.Fields(os.Getenv(EnvBuildFlags)), "-race")
}

// raceSubset skips this variant of a test in the -race pass (raceBuild)
// unless keep: there the slowest tests with several variants run a subset
// that still takes each code path (file format, tiering, PIT or not,
// shard counts equal or not) under the race detector, and the plain pass
// runs them all. It keeps CI within its time budget.
func raceSubset(t *testing.T, keep bool) {
	t.Helper()
	if raceBuild() && !keep {
		t.Skip("this variant runs in the plain pass; the -race pass runs a subset (raceSubset)")
	}
}

func buildDfly(dir string) (string, error) {
	if bin := os.Getenv(EnvBinary); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return bin, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, "dfly")
	args := []string{"build", "-o", out}
	args = append(args, strings.Fields(os.Getenv(EnvBuildFlags))...)
	args = append(args, "github.com/dfly/dfly/cmd/dfly")
	cmd := exec.Command(goTool, args...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, output)
	}
	return out, nil
}

func lookupEnv(name string) (string, bool) { return os.LookupEnv(name) }

// needTime skips t when the test binary's -timeout leaves less than d. The
// README's "go test ./..." runs under Go's default 10 minutes, which the
// whole end-to-end suite can outgrow on a slow or loaded machine (cmd/go
// then kills the package); .ci/run gives it 15 and runs every test. The
// longest tests call it first, so a short timeout skips them, saying so,
// instead of failing the package.
func needTime(t *testing.T, d time.Duration) {
	t.Helper()
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d {
		t.Skipf("needs about %v and -timeout leaves %v: run with -timeout 30m, as .ci/run does",
			d, time.Until(dl).Round(time.Second))
	}
}
