package store

import (
	"fmt"
	"strings"
)

// CheckTxn checks a transaction against the contract's limits before any
// of it is applied: at most MaxTxnOps conditions and ops, no empty key or
// prefix, known targets and kinds, and no key put twice or both put and
// deleted (as etcd, deletes may overlap one another). Implementations call
// it first, so that every one refuses the same transactions with the same
// errors.
func CheckTxn(conds []Cond, ops []Op) error {
	if len(conds) > MaxTxnOps {
		return fmt.Errorf("%w: %d conditions, at most %d", ErrTooManyOps, len(conds), MaxTxnOps)
	}
	if len(ops) > MaxTxnOps {
		return fmt.Errorf("%w: %d ops, at most %d", ErrTooManyOps, len(ops), MaxTxnOps)
	}
	for i, c := range conds {
		if c.Key == "" {
			return fmt.Errorf("store: condition %d: empty key", i)
		}
		if c.Target < TargetValue || c.Target > TargetCreateRev {
			return fmt.Errorf("store: condition %d on %q: unknown target %v", i, c.Key, c.Target)
		}
	}
	for i, op := range ops {
		switch op.Kind {
		case OpPut, OpDelete:
			if op.Key == "" {
				return fmt.Errorf("store: op %d: empty key", i)
			}
		case OpDeletePrefix:
			if op.Key == "" {
				return fmt.Errorf("store: op %d: delete of the empty prefix (every key)", i)
			}
		default:
			return fmt.Errorf("store: op %d on %q: unknown kind %d", i, op.Key, op.Kind)
		}
	}
	for j, put := range ops {
		if put.Kind != OpPut {
			continue
		}
		for i, op := range ops {
			switch {
			case i == j:
			case op.Kind == OpPut && op.Key == put.Key && i < j:
				return fmt.Errorf("store: ops %d and %d both put %q", i, j, put.Key)
			case op.Kind == OpDelete && op.Key == put.Key,
				op.Kind == OpDeletePrefix && strings.HasPrefix(put.Key, op.Key):
				return fmt.Errorf("store: op %d puts %q, which op %d deletes", j, put.Key, i)
			}
		}
	}
	return nil
}
