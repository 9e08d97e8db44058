// Package geo is the geohash arithmetic of Redis's GEO commands: a point
// is a 52-bit interleaved geohash (26 bits of latitude, 26 of longitude)
// kept as a sorted-set score, and a search is a few score ranges (the
// cell around the centre and its eight neighbours) filtered by distance.
// Every step follows Redis 7.0 (geohash.c, geohash_helper.c) so that the
// same data gives the same scores, cells, distances and result order.
//
// Never: I/O, key look-ups, argument parsing or replies; the server
// (family/geo.go) stores the scores in a zset and reads the
// ranges Cells and ScoreRange give.
//
// Invariants: a stored point's score is its 52-bit cell (StepMax);
// Decode gives the cell's centre, clamped to the WGS84 limits, so a
// point read back may differ from the one written, as in Redis;
// Cells lists the nine cells in Redis's order, so unsorted results
// come in Redis's order.
package geo
