// Package logfile is a log file that can be reopened at its path, for
// rotation by logrotate and the like: the rotator renames the file, then
// tells the process (fulcrum serve: SIGUSR1), which calls Reopen; lines
// written before Reopen land in the renamed file, lines after it in a new
// file at the path, and none is lost in between.
//
//	f, err := logfile.Open("/var/log/fulcrum/access.log")
//	...
//	defer f.Close()
//	fmt.Fprintln(f, "a line") // one Write per line
//	...
//	err = f.Reopen() // after the file was renamed
package logfile
