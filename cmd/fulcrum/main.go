// Command fulcrum is an adaptive load balancer for replicated RPC servers.
package main

import (
	"os"

	"github.com/fulcrum-lb/fulcrum/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
