package stream

import (
	"net"
	"strings"
)

// IsLoopback reports whether a listen address (host:port, as given to net.Listen) accepts connections only
// from this machine. agentrt serve requires Config.Token whenever it does not: an empty host or an
// unspecified address (0.0.0.0, ::) listens on every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
