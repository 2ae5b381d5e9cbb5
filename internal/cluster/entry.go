package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

// InstancesDir is where the directory lives under the deployment's
// prefix: <prefix>instances/<name>.
const InstancesDir = "instances/"

// Entry is one instance's directory entry, the JSON value of its key.
type Entry struct {
	Name     string `json:"name"`
	AdminURL string `json:"admin_url"`
	// FrontDoors are the instance's front doors by group: the address
	// bound, or the error that keeps it from binding.
	FrontDoors map[string]protocol.FrontDoorBinding `json:"front_doors"`
	Started    time.Time                            `json:"started"`
	Version    string                               `json:"version"`
}

// Key is the etcd key of instance name's entry under prefix.
func Key(prefix, name string) string { return prefix + InstancesDir + name }

// ErrBadEntry is what DecodeEntry's errors wrap.
var ErrBadEntry = errors.New("cluster: directory entry cannot be decoded")

// DecodeEntry decodes the entry stored under key (below prefix): its value
// must be an entry's JSON object whose name is the key's last element.
func DecodeEntry(prefix, key string, value []byte) (Entry, error) {
	name, ok := strings.CutPrefix(key, prefix+InstancesDir)
	if !ok || name == "" || strings.Contains(name, "/") {
		return Entry{}, fmt.Errorf("%w: key %q is not %s<name>", ErrBadEntry, key, prefix+InstancesDir)
	}
	var e Entry
	if err := json.Unmarshal(value, &e); err != nil {
		return Entry{}, fmt.Errorf("%w: key %q: %v", ErrBadEntry, key, err)
	}
	if e.Name != name {
		return Entry{}, fmt.Errorf("%w: key %q holds the entry of instance %q", ErrBadEntry, key, e.Name)
	}
	return e, nil
}

// encode is e's stored value.
func (e Entry) encode() ([]byte, error) {
	if e.FrontDoors == nil {
		e.FrontDoors = map[string]protocol.FrontDoorBinding{}
	}
	return json.Marshal(e)
}

// Instance is e as GET /v1/cluster lists it.
func (e Entry) Instance(self bool) protocol.ClusterInstance {
	fd := maps.Clone(e.FrontDoors)
	if fd == nil {
		fd = map[string]protocol.FrontDoorBinding{}
	}
	return protocol.ClusterInstance{Name: e.Name, AdminURL: e.AdminURL, FrontDoors: fd, Started: e.Started, Version: e.Version, Self: self}
}
