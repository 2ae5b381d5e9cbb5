package bridge

import (
	"net/http"

	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor/httpdoor/lean"
)

// statusClientClosed is logged for calls whose client went away before an
// answer (nginx's 499), as httpdoor does.
const statusClientClosed = lean.StatusClientClosed

// writeAccess writes r's access log line (httpdoor's format).
func (s *Server) writeAccess(lw *httpdoor.LogWriter, r *http.Request) {
	s.acc.WriteEntry(lw.Entry(r), s.now())
}
