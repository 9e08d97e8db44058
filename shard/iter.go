package shard

import "github.com/dfly/dfly/dash"

// Iterator points at one entry of a DB table.
type Iterator = dash.Iterator
