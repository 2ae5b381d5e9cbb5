package etcdstore

import "time"

// minLeaseTTL is the shortest lease the store grants: etcd's expiry is
// not exact below that.
const minLeaseTTL = 2

// LeaseTTL is the lease, in whole seconds, of an entry whose rule has
// the given timeout: the timeout rounded up to whole seconds, at least
// 2 s.
func LeaseTTL(timeout time.Duration) int64 {
	s := int64((timeout + time.Second - 1) / time.Second)
	return max(s, minLeaseTTL)
}

// renewDue tells whether an entry of the given timeout, whose lease this
// instance last renewed (or granted) at last, is to be renewed at now:
// once a third of the timeout has passed, or when this instance has not
// renewed it yet (last is zero). Pure.
func renewDue(last time.Time, timeout time.Duration, now time.Time) bool {
	return last.IsZero() || now.Sub(last) >= timeout/3
}
