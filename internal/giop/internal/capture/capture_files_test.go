package capture

import (
	"path/filepath"
	"testing"
)

func TestReadsEveryCapture(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/captures/*.pcap")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, f := range files {
		msgs, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		streams := map[string]int{}
		for _, m := range msgs {
			streams[m.Stream]++
		}
		t.Logf("%s: %d messages in %d streams", filepath.Base(f), len(msgs), len(streams))
		if len(msgs) == 0 {
			t.Errorf("%s: no messages", f)
		}
	}
}
