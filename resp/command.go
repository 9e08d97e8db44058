package resp

import "strconv"

// AppendCommand appends words as a RESP array of bulk strings: the form
// of a command sent to a server (a replica's handshake, the command stream
// a master sends its Redis replicas, MIGRATE's RESTOREs).
func AppendCommand(dst []byte, words ...string) []byte { return appendCommand(dst, words) }

// AppendArgs is AppendCommand of byte-slice arguments.
func AppendArgs(dst []byte, args [][]byte) []byte { return appendCommand(dst, args) }

func appendCommand[T string | []byte](dst []byte, args []T) []byte {
	dst = appendLen(dst, '*', len(args))
	for _, a := range args {
		dst = appendLen(dst, '$', len(a))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

func appendLen(dst []byte, prefix byte, n int) []byte {
	dst = append(dst, prefix)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}
