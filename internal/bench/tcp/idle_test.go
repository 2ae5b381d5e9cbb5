package tcp

import (
	"fmt"
	"strings"
	"testing"
)

// A few idle connections fit the limit as it is; a million cannot (six
// million descriptors are above any kernel's nr_open), so the bench opens
// what fits and says why.
func TestRaiseDescriptorLimit(t *testing.T) {
	small := raiseDescriptorLimit(10)
	if small.Idle != 10 || !strings.Contains(small.Note, "RLIMIT_NOFILE was") {
		t.Errorf("raiseDescriptorLimit(10) = %+v, want all 10 and the limit in the note", small)
	}
	huge := raiseDescriptorLimit(1_000_000)
	if huge.Idle >= 1_000_000 || uint64(6*huge.Idle+4096) > huge.Limit {
		t.Errorf("raiseDescriptorLimit(1e6) = %+v, want what fits the limit", huge)
	}
	if want := fmt.Sprintf("so %d were opened", huge.Idle); !strings.Contains(huge.Note, want) || !strings.Contains(huge.Note, "failed") {
		t.Errorf("note %q, want the failure and %q", huge.Note, want)
	}
}
