package capture

import (
	"fmt"
	"os"
)

// Message is one GIOP message found in a capture.
type Message struct {
	// Stream names the TCP direction it travelled, "src:port>dst:port".
	Stream string
	// Index is its position in that direction, from 0.
	Index int
	// Bytes is the whole message, header included.
	Bytes []byte
}

// ReadFile reads the capture at path; see [Read].
func ReadFile(path string) ([]Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	msgs, err := Read(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return msgs, nil
}

// Read parses a classic pcap file and returns the GIOP messages of every
// TCP direction carrying data, directions in order of their first packet.
func Read(data []byte) ([]Message, error) {
	packets, linkType, err := readPcap(data)
	if err != nil {
		return nil, err
	}
	flows := map[string]*flow{}
	var order []string
	for i, p := range packets {
		seg, err := decodePacket(linkType, p)
		if err != nil {
			return nil, fmt.Errorf("packet %d: %w", i+1, err)
		}
		if seg == nil {
			continue // not TCP
		}
		f := flows[seg.key]
		if f == nil {
			f = &flow{}
			flows[seg.key] = f
			order = append(order, seg.key)
		}
		f.add(seg)
	}
	var out []Message
	for _, key := range order {
		stream, err := flows[key].reassemble()
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", key, err)
		}
		msgs, err := split(stream)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", key, err)
		}
		for i, m := range msgs {
			out = append(out, Message{Stream: key, Index: i, Bytes: m})
		}
	}
	return out, nil
}
