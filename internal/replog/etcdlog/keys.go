package etcdlog

import (
	"crypto/rand"
	"net/url"
	"strconv"
	"strings"
)

// keys are one group's etcd keys.
type keys struct {
	log     string // prefix of the entries, ends with "/"
	sess    string // prefix of the sessions, ends with "/"
	trimKey string
}

func newKeys(prefix, group string) keys {
	g := url.PathEscape(group)
	return keys{log: prefix + "log/" + g + "/", sess: prefix + "sess/" + g + "/", trimKey: prefix + "trim/" + g}
}

// entry is a new entry's key; it names the entry's size.
func (k keys) entry(size int) string {
	return k.log + rand.Text() + "." + strconv.Itoa(size)
}

// sizeOf is the size an entry's key names; 0 for a key that names none.
func sizeOf(key string) int64 {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseInt(key[i+1:], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (k keys) session(s string) string { return k.sess + url.PathEscape(s) }

func (k keys) dedup(s string, seq uint64) string {
	return k.session(s) + "/" + strconv.FormatUint(seq, 10)
}
