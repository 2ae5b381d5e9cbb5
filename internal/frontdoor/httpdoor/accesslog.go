package httpdoor

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// accessLog writes one line per request, in logfmt:
//
//	time=2026-01-02T15:04:05.000Z client=127.0.0.1:50312 method=GET path="/prime/7" proto=HTTP/1.1 status=307 replica=r1 duration_ms=0.042 bytes=0
//
// time is when the request started (UTC); path is the request target as
// sent, quoted; replica is "-" when none was chosen; bytes counts the
// response body written to the client; status 499 means the client went
// away before an answer. Lines are written whole, one Write each.
//
// With json set, each line is a JSON object with the same keys instead
// (see appendJSONEntry); status, duration_ms and bytes are numbers.
type accessLog struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	buf  []byte
}

// NewAccessLog returns an access log that writes the lines of this
// front door's format (logfmt, or JSON with json set) to w, one Write per
// line, serialised: for other front doors of HTTP groups (the replicated
// bridge) to log as this one does.
func NewAccessLog(w io.Writer, json bool) lean.AccessLog {
	return &accessLog{w: w, json: json}
}

func (a *accessLog) write(lw *LogWriter, r *http.Request, now func() time.Time) {
	a.WriteEntry(lw.Entry(r), now())
}

// WriteEntry writes e's line; the request ended at end. It implements
// lean.AccessLog.
func (a *accessLog) WriteEntry(e *lean.Entry, end time.Time) {
	d := end.Sub(e.Start)
	status := e.Status
	if status == 0 {
		status = http.StatusOK
	}
	replica := e.Replica
	if replica == "" {
		replica = "-"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.json {
		a.buf = appendJSONEntry(a.buf[:0], e, status, replica, d)
		_, _ = a.w.Write(a.buf)
		return
	}
	b := a.buf[:0]
	b = append(b, "time="...)
	b = e.Start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, " client="...)
	b = append(b, e.Client...)
	b = append(b, " method="...)
	b = append(b, e.Method...)
	b = append(b, " path="...)
	b = strconv.AppendQuote(b, e.Target)
	b = append(b, " proto="...)
	b = append(b, e.Proto...)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, " replica="...)
	b = append(b, replica...)
	b = append(b, " duration_ms="...)
	b = strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, '\n')
	_, _ = a.w.Write(b)
	a.buf = b
}

// LogWriter records what the access log needs of a response, for this
// front door and the other front doors of HTTP groups (the replicated
// bridge). It unwraps for http.ResponseController, so flushing, deadlines
// and hijacking reach the server's writer. Not safe for concurrent use.
type LogWriter struct {
	http.ResponseWriter
	start   time.Time
	status  int
	bytes   int64
	replica string
}

// NewLogWriter returns the LogWriter of w for a request that started at
// start.
func NewLogWriter(w http.ResponseWriter, start time.Time) *LogWriter {
	return &LogWriter{ResponseWriter: w, start: start}
}

func (l *LogWriter) WriteHeader(code int) {
	if l.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		l.status = code
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *LogWriter) Write(p []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	n, err := l.ResponseWriter.Write(p)
	l.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher for code that asserts it (ReverseProxy
// flushes streamed replies).
func (l *LogWriter) Flush() { _ = http.NewResponseController(l.ResponseWriter).Flush() }

// Unwrap returns the server's writer (http.ResponseController).
func (l *LogWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// SetReplica records the replica of the call (l may be nil).
func (l *LogWriter) SetReplica(id string) {
	if l != nil {
		l.replica = id
	}
}

// SetStatus records a status no answer was written with, such as
// lean.StatusClientClosed (l may be nil).
func (l *LogWriter) SetStatus(status int) {
	if l != nil {
		l.status = status
	}
}

// Entry is the access log entry of r, answered through l.
func (l *LogWriter) Entry(r *http.Request) *lean.Entry {
	return &lean.Entry{
		Start: l.start, Client: r.RemoteAddr, Method: r.Method, Target: r.RequestURI, Proto: r.Proto,
		Status: l.status, Replica: l.replica, Bytes: l.bytes,
	}
}
