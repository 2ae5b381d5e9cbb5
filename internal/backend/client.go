package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// CallPrime makes one GET of the prime service at url (a /prime/{n} or
// /count/{x} URL) with hc and returns the served_by of the answer: the
// replica that served it. A status other than 200, or an answer without
// served_by, is an error.
func CallPrime(ctx context.Context, hc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "", fmt.Errorf("%s answered %s", url, resp.Status)
	}
	var body struct {
		ServedBy string `json:"served_by"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("reading the answer of %s: %w", url, err)
	}
	if body.ServedBy == "" {
		return "", fmt.Errorf("%s answered without served_by", url)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
	return body.ServedBy, nil
}
