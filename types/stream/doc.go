// Package stream owns the Redis stream representation: entries ordered by
// a 128-bit ID, consumer groups with their pending entries lists (PELs)
// and consumers, and the bookkeeping Redis 7.0 keeps for them (last
// generated ID, entries added, max deleted entry ID, per-group entries
// read and lag).
//
// Entries live in nodes, packed runs of up to NodeMaxEntries entries (or
// about NodeMaxBytes of field data), like the listpacks Redis keeps in its
// rax: a node holds its IDs in a pointer-free slice and the field/value
// bytes of all its entries in one buffer, so a stream costs a few heap
// objects per hundred entries, not one per entry. The nodes sit in a slice
// ordered by their first ID; a seek is a binary search over the nodes and
// then over the node's IDs (O(log n)). New entries are only ever appended
// at the tail (IDs grow), so the node index changes only when a node fills
// up or is emptied by XDEL or trimming.
//
// It never does I/O, never parses command arguments (except stream IDs,
// whose syntax is part of the type) and never writes replies. Byte slices
// handed out (entry fields) are valid only until the next mutation.
//
// Walks over a huge stream can proceed in bounded chunks with a Cursor,
// which resumes by ID and so survives mutations between chunks.
//
// Invariants:
//   - Entry IDs are strictly increasing across nodes and within a node;
//     no node is empty; Len is the sum of the nodes' entry counts.
//   - Every entry ID is at most LastID; LastID never decreases except by
//     XSETID, which still keeps it at least the last entry's ID.
//   - A group's PEL is sorted by ID and unique; every PEL entry's owner is
//     one of the group's consumers and appears in that consumer's PEL, and
//     each consumer's PEL holds exactly the group PEL entries it owns. (An
//     RDB load builds a PEL with AddPending and then Own, and must leave no
//     entry without an owner.)
//
// For RDB: Walk yields the entries; LastID, FirstID, MaxDeletedID,
// EntriesAdded and Groups are the metadata; a Group has Name, LastID,
// EntriesRead, its PEL (PendingLen, PendingAt: ID, DeliveryTime,
// DeliveryCount) and Consumers (Name, SeenTime, Pending IDs). A load
// Appends the entries in order, then sets the metadata fields (Append
// counts EntriesAdded and moves LastID, which the file's values replace),
// then CreateGroup, AddPending, CreateConsumer and Own.
//   - Groups are sorted by name and consumers by name (byte order, as in
//     Redis's rax), so replies list them in Redis's order.
package stream
