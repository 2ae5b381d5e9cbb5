//go:build linux

package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// waitGroupGone waits up to d for process group pgid to have no live
// member and returns the members still alive then.
func waitGroupGone(pgid int, d time.Duration) []string {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return left
		}
	}
}

// groupMembers lists the live (not zombie) processes of process group
// pgid, as "pid (command)".
func groupMembers(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		// After "pid (comm)": state ppid pgrp ...
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			out = append(out, s[:end+1])
		}
	}
	return out
}
