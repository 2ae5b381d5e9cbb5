package giop

import (
	"github.com/fulcrum-lb/fulcrum/internal/giop/cdr"
)

// ServiceID identifies a service context (IOP::ServiceId).
type ServiceID uint32

// Service context ids seen in practice (CORBA 3.x, ORB Interoperability
// Architecture chapter, "Service Context").
const (
	ServiceTransaction           ServiceID = 0
	ServiceCodeSets              ServiceID = 1
	ServiceBiDirIIOP             ServiceID = 5
	ServiceSendingContextRunTime ServiceID = 6
)

// ServiceContext is one IOP::ServiceContext: an id and its context_data,
// kept undecoded.
type ServiceContext struct {
	ID   ServiceID
	Data []byte
}

// FindServiceContext returns the data of the first context with id.
func FindServiceContext(list []ServiceContext, id ServiceID) ([]byte, bool) {
	for _, sc := range list {
		if sc.ID == id {
			return sc.Data, true
		}
	}
	return nil, false
}

func encodeServiceContexts(e *cdr.Encoder, list []ServiceContext) {
	e.ULong(uint32(len(list)))
	for _, sc := range list {
		e.ULong(uint32(sc.ID))
		e.OctetSeq(sc.Data)
	}
}

func decodeServiceContexts(d *cdr.Decoder) []ServiceContext {
	n := d.SeqLen("service_context", 8) // context_id + empty context_data
	if n == 0 {
		return nil
	}
	list := make([]ServiceContext, 0, n)
	for range n {
		id := ServiceID(d.ULong("service_context.context_id"))
		data := d.OctetSeq("service_context.context_data")
		if d.Err() != nil {
			return nil
		}
		list = append(list, ServiceContext{ID: id, Data: data})
	}
	return list
}
