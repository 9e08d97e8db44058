package script

import (
	"bytes"
	"strings"
)

// A script's "#!lua flags=..." line, as Redis 7.0's EVAL reads it
// (evalExtractShebangFlags): a script with one declares what it does, and
// EVAL checks it before the run as FCALL checks a function's flags; a
// script without one runs as before 7.0 (compatibility mode).

// parseShebang returns the flags (bits of funcFlagNames) of body's shebang
// and its length up to the newline, which stays in the compiled text so
// that line numbers hold; n == 0: no shebang. The error is the full reply.
func parseShebang(body []byte) (flags, n int, errText string) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return 0, 0, ""
	}
	n = bytes.IndexByte(body, '\n')
	if n < 0 {
		return 0, 0, "ERR Invalid script shebang"
	}
	parts := strings.Fields(string(body[:n]))
	if parts[0] != "#!lua" {
		return 0, 0, "ERR Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, 0, "ERR Unknown lua shebang option: " + p
		}
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			bit := -1
			for i, known := range funcFlagNames {
				if name == known {
					bit = i
				}
			}
			if bit < 0 {
				return 0, 0, "ERR Unexpected flag in script shebang: " + name
			}
			flags |= 1 << bit
		}
	}
	return flags, n, ""
}

// CallsMayOOM reports whether, over maxmemory, a run's first write is
// refused (ErrOOM): a script without a shebang, as Redis's compatibility
// mode; one with allow-oom writes on, and any other was refused at its
// start (Refusal).
func CallsMayOOM(declared bool, flags int) bool { return !declared || flags&flagAllowOOM == 0 }

// ErrOOM refuses a script that may write, or a script's first write,
// while used memory is over maxmemory.
const ErrOOM = "OOM command not allowed when used memory > 'maxmemory'."

// Refusal is why a script (declared: with a shebang) or a function with
// flags may not start: ro, run by EVAL_RO, EVALSHA_RO or FCALL_RO;
// replica, the server is a read-only replica; oom, used memory is over
// maxmemory (allow-oom lets it run). "" when it may.
func Refusal(declared bool, flags int, ro, replica, oom bool) string {
	if !declared || flags&flagNoWrites != 0 {
		return ""
	}
	if oom && flags&flagAllowOOM == 0 {
		return ErrOOM
	}
	if replica {
		return "READONLY Can not run script with write flag on readonly replica"
	}
	if ro {
		return ErrWriteFunctionRO
	}
	return ""
}
