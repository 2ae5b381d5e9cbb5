package groupstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/registry"
	"github.com/fulcrum-lb/fulcrum/internal/store/boltstore"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// Load reads one consistent revision however busy other writers are (other
// instances on etcd write all the time): it never gives up, and what it
// returns is whole — every replica it returns has its group.
func TestLoadWhileOthersWrite(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := New(st)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("g%d", i)
			if err := r.PutGroup(registry.WithDefaults(protocol.Group{Name: name, FrontDoor: "127.0.0.1:0"})); err != nil {
				t.Error(err)
				return
			}
			if err := r.PutReplica(protocol.Replica{ID: "r-" + name, Group: name, Address: "http://127.0.0.1:9001", Weight: 1, Created: time.Unix(0, 0).UTC()}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 200 {
		s, err := r.Load()
		if err != nil {
			t.Fatalf("load while another writes: %v", err)
		}
		groups := map[string]bool{}
		for _, g := range s.Groups {
			groups[g.Name] = true
		}
		for _, rep := range s.Replicas {
			if !groups[rep.Group] {
				t.Fatalf("replica %s loaded without its group %s: not one revision", rep.ID, rep.Group)
			}
		}
	}
	close(stop)
	wg.Wait()
}
