package python

import (
	_ "embed"
	"os"
	"path/filepath"
)

// The Python programs the experiment runs, shipped in the binary so that
// the bench runs from any directory.
var (
	//go:embed replica.py
	replicaPy []byte
	//go:embed driver.py
	driverPy []byte
)

// writeScripts writes replica.py and driver.py into dir and returns their
// paths.
func writeScripts(dir string) (replica, driver string, err error) {
	replica, driver = filepath.Join(dir, "replica.py"), filepath.Join(dir, "driver.py")
	if err := os.WriteFile(replica, replicaPy, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(driver, driverPy, 0o644); err != nil {
		return "", "", err
	}
	return replica, driver, nil
}
