package protocol

// ReloadResult is the answer of POST /v1/reload: the groups a reload of
// the config file created, changed and deleted, and the settings it
// changed that take effect only at the next start. Each list is sorted
// and never null.
type ReloadResult struct {
	// Added are the groups the file declares that did not run.
	Added []string `json:"added"`
	// Changed are the declared groups whose running settings differed
	// (changed through the API: reverted) or that were held by the API
	// (taken over).
	Changed []string `json:"changed"`
	// Removed are the config groups the file no longer declares.
	Removed []string `json:"removed"`
	// RestartRequired names the top-level keys that changed but take
	// effect only at the next start (admin, admin_tls, data_dir, http_engine).
	RestartRequired []string `json:"restart_required"`
}
