package logfile

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// Mode is the permission a new log file is created with (before umask).
const Mode = 0o644

// ErrClosed is returned by Write and Reopen after Close.
var ErrClosed = errors.New("logfile: closed")

// File is a file opened for appending that Reopen opens again at the same
// path. Safe for concurrent use; each Write goes whole to one file (the
// file is opened with O_APPEND, so concurrent lines do not overwrite each
// other).
type File struct {
	path string
	mu   sync.RWMutex // held for reading by Write, for writing to swap f
	f    *os.File     // nil once closed
}

// Open opens path for appending, creating it with Mode if missing.
func Open(path string) (*File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &File{path: path, f: f}, nil
}

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, Mode)
	if err != nil {
		return nil, fmt.Errorf("logfile: %w", err)
	}
	return f, nil
}

// Path is the path the file is opened (and reopened) at.
func (l *File) Path() string { return l.path }

// Write appends p to the file currently open at the path.
func (l *File) Write(p []byte) (int, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.f == nil {
		return 0, ErrClosed
	}
	return l.f.Write(p)
}

// Reopen opens the path again, creating the file if it was moved away,
// and sends later writes there; writes in progress finish on the old file,
// which is then closed. When the path cannot be opened, writes keep going
// to the old file and the error is returned.
func (l *File) Reopen() error {
	nf, err := openAppend(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	if old == nil {
		l.mu.Unlock()
		nf.Close()
		return ErrClosed
	}
	l.f = nf
	l.mu.Unlock()
	if err := old.Close(); err != nil {
		return fmt.Errorf("logfile: closing the previous file: %w", err)
	}
	return nil
}

// Close closes the file; later writes fail with ErrClosed.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	err := l.f.Close()
	l.f = nil
	return err
}
