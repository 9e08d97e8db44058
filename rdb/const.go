package rdb

// RDB value type codes (Redis rdb.h).
const (
	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeModulePreGA      = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeStreamListpacks  = 15
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks2 = 19
	typeSetListpack      = 20
	typeStreamListpacks3 = 21
)

// RDB opcodes (Redis rdb.h).
const (
	opFunction2      = 245
	opFunctionPreGA  = 246
	opModuleAux      = 247
	opIdle           = 248
	opFreq           = 249
	opAux            = 250
	opResizeDB       = 251
	opExpireTimeMs   = 252
	opExpireTime     = 253
	opSelectDB       = 254
	opEOF            = 255
	quicklistPlain   = 1
	quicklistPacked  = 2
	streamDeleted    = 1
	streamSameFields = 2
)
