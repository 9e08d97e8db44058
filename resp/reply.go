package resp

import "bytes"

// ReplyEnd is the length of the first whole reply in b, a Writer's output
// (RESP2 or RESP3), or -1 when b does not start with one.
func ReplyEnd(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	line := bytes.Index(b, []byte("\r\n"))
	if line < 1 {
		return -1
	}
	next := line + 2
	switch b[0] {
	case '+', '-', ':', ',', '_', '#', '(':
		return next
	case '$', '=', '!':
		n, ok := parseLength(b[1:line])
		if !ok {
			return -1
		}
		if n < 0 {
			return next // $-1
		}
		if end := next + int(n) + 2; end <= len(b) {
			return end
		}
		return -1
	case '*', '~', '>', '%':
		n, ok := parseLength(b[1:line])
		if !ok {
			return -1
		}
		if b[0] == '%' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			e := ReplyEnd(b[next:])
			if e < 0 {
				return -1
			}
			next += e
		}
		return next
	}
	return -1
}
