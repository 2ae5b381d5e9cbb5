// Package boltlog is the single-node engine of replog: the logs of every
// replicated group in one bbolt file of their own (<data_dir>/log.db by
// convention), beside the balancer's store.
//
// Layout: a root bucket per group ("g/<group>") holding
//
//	log/<position, 8 bytes big-endian>      -> the encoded entry (replog.Encode)
//	dedup/<uvarint len><session><seq, BE>   -> position, 8 bytes big-endian
//	sessions/<session>                      -> last use, Unix nanoseconds, 8 bytes BE
//	next, trimmed, bytes                    -> uint64 big-endian
//
// Positions are dense: 1, 2, 3, ... per group. A session whose last use
// is SessionTTL or more before the clock's now is expired: its dedup keys
// are deleted when it is next used, and by Sweep (run every SweepEvery).
//
// Durability and group commit: one goroutine takes every AppendOrGet
// waiting at that moment (up to MaxBatch) and commits them in one bbolt
// transaction, which fsyncs the file before Commit returns (NoSync is
// off); each AppendOrGet returns only after that commit, so an
// acknowledged append survives kill -9 and power loss (as far as the
// disk honours fsync). Appends arriving while a commit fsyncs wait for
// the next one, so a busy log commits many appends per fsync.
//
//	db, err := boltlog.Open(filepath.Join(dataDir, boltlog.FileName), boltlog.Options{})
//	l, err := db.Group("prime", boltlog.GroupOptions{})
//	pos, existed, err := l.AppendOrGet(ctx, replog.Append{...})
package boltlog
