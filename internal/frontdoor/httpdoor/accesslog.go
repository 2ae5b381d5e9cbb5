package httpdoor

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// accessLog writes one line per request, in logfmt:
//
//	time=2026-01-02T15:04:05.000Z client=127.0.0.1:50312 method=GET path="/prime/7" proto=HTTP/1.1 status=307 replica=r1 duration_ms=0.042 bytes=0
//
// time is when the request started (UTC); path is the request target as
// sent, quoted; replica is "-" when none was chosen; bytes counts the
// response body written to the client; status 499 means the client went
// away before an answer. Lines are written whole, one Write each.
type accessLog struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (a *accessLog) write(lw *logWriter, r *http.Request, now func() time.Time) {
	a.writeEntry(&logEntry{
		start: lw.start, client: r.RemoteAddr, method: r.Method, target: r.RequestURI, proto: r.Proto,
		status: lw.status, replica: lw.replica, bytes: lw.bytes,
	}, now())
}

// logEntry is what one access log line says of a request.
type logEntry struct {
	start                         time.Time
	client, method, target, proto string
	status                        int
	replica                       string
	bytes                         int64
}

// writeEntry writes e's line; the request ended at end.
func (a *accessLog) writeEntry(e *logEntry, end time.Time) {
	d := end.Sub(e.start)
	status := e.status
	if status == 0 {
		status = http.StatusOK
	}
	replica := e.replica
	if replica == "" {
		replica = "-"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.buf[:0]
	b = append(b, "time="...)
	b = e.start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, " client="...)
	b = append(b, e.client...)
	b = append(b, " method="...)
	b = append(b, e.method...)
	b = append(b, " path="...)
	b = strconv.AppendQuote(b, e.target)
	b = append(b, " proto="...)
	b = append(b, e.proto...)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, " replica="...)
	b = append(b, replica...)
	b = append(b, " duration_ms="...)
	b = strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, e.bytes, 10)
	b = append(b, '\n')
	_, _ = a.w.Write(b)
	a.buf = b
}

// logWriter records what the access log needs of a response. It unwraps
// for http.ResponseController, so flushing, deadlines and hijacking reach
// the server's writer.
type logWriter struct {
	http.ResponseWriter
	start   time.Time
	status  int
	bytes   int64
	replica string
}

func (l *logWriter) WriteHeader(code int) {
	if l.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		l.status = code
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *logWriter) Write(p []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	n, err := l.ResponseWriter.Write(p)
	l.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher for code that asserts it.
func (l *logWriter) Flush() { _ = http.NewResponseController(l.ResponseWriter).Flush() }

// Unwrap returns the server's writer (http.ResponseController).
func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }
