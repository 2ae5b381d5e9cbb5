package bridge

import (
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// statusClientClosed is logged for calls whose client went away before an
// answer (nginx's 499), as httpdoor does.
const statusClientClosed = lean.StatusClientClosed

// writeAccess writes r's access log line (httpdoor's format).
func (s *Server) writeAccess(lw *logWriter, r *http.Request) {
	s.acc.WriteEntry(&lean.Entry{
		Start: lw.start, Client: r.RemoteAddr, Method: r.Method, Target: r.RequestURI, Proto: r.Proto,
		Status: lw.status, Replica: lw.replica, Bytes: lw.bytes,
	}, s.now())
}

// logWriter records what the access log needs of a response. It unwraps
// for http.ResponseController.
type logWriter struct {
	http.ResponseWriter
	start   time.Time
	status  int
	bytes   int64
	replica string
}

func (l *logWriter) WriteHeader(code int) {
	if l.status == 0 && code >= 200 {
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

// Flush implements http.Flusher (ReverseProxy flushes streamed replies).
func (l *logWriter) Flush() { _ = http.NewResponseController(l.ResponseWriter).Flush() }

// Unwrap returns the server's writer (http.ResponseController).
func (l *logWriter) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// setReplica records the replica of the call (l may be nil).
func (l *logWriter) setReplica(id string) {
	if l != nil {
		l.replica = id
	}
}

// setStatus records a status no answer was written with (l may be nil).
func (l *logWriter) setStatus(status int) {
	if l != nil {
		l.status = status
	}
}
