package resp

import "testing"

// TestAppendCommand: the encoding parses back to the same arguments,
// empty and binary ones included.
func TestAppendCommand(t *testing.T) {
	words := []string{"SET", "", "a\r\nb", string([]byte{0, 255})}
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	a := AppendCommand([]byte("x"), words...)
	b := AppendArgs([]byte("x"), args)
	if string(a) != string(b) {
		t.Fatalf("AppendCommand %q, AppendArgs %q", a, b)
	}
	if want := "x*4\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n$2\r\n\x00\xff\r\n"; string(a) != want {
		t.Fatalf("got %q, want %q", a, want)
	}
}
