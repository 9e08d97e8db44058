package family

import "strconv"

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
