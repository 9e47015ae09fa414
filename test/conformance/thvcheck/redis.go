package main

import (
	"fmt"
	"io"
	"os"

	"github.com/alicebob/miniredis/v2"
)

// serveRedis runs an in-memory Redis (miniredis, which ToolHive's own
// tests use) on a free loopback port until stdin closes, so the
// conformance suite can run the runner's Redis session storage and rate
// limiting without a Redis installation. With a password, clients must
// AUTH with it. It prints the address on the first line of stdout.
func serveRedis(password string) error {
	s := miniredis.NewMiniRedis()
	if password != "" {
		s.RequireAuth(password)
	}
	if err := s.Start(); err != nil {
		return err
	}
	defer s.Close()
	fmt.Println(s.Addr())
	_, err := io.Copy(io.Discard, os.Stdin)
	return err
}
