// Package list owns the representation of Redis lists: a quicklist, a
// slice of packed nodes bounded as Redis's list-max-listpack-size (Fill;
// default -2, 8 KiB), each entry written as
// uvarint(len) bytes reverse-uvarint(len) so a node walks both ways.
//
// Redis 7.0 reports every list as "quicklist" (listpack-encoded lists came
// in 7.2), so Encoding does too; a small list is simply one node.
//
// Never: I/O, locking, knowledge of keys and commands.
//
// Invariants: no node is empty; an element longer than a node's limit sits alone
// in its node; byte slices handed out alias the list and are valid only
// until its next mutation. A snapshot walks the list a node at a time
// (NumNodes/Node), each a bounded chunk.
package list
