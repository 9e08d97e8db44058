//go:build !race

package rdb

const raceEnabled = false
