// userinfo prints, for each URL argument, what Go's net/url reads as its userinfo and host: the
// oracle for proxyfleet's credential redaction (Go is what containerd and the kubelet parse with).
package main

import (
	"encoding/json"
	"net/url"
	"os"
)

type parsed struct {
	URL      string `json:"url"`
	User     string `json:"user"`
	Password string `json:"password"`
	HasUser  bool   `json:"has_user"`
	Host     string `json:"host"`
	Error    string `json:"error,omitempty"`
}

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, raw := range os.Args[1:] {
		result := parsed{URL: raw}
		u, err := url.Parse(raw)
		if err != nil {
			result.Error = err.Error()
		} else {
			result.Host = u.Host
			if u.User != nil {
				result.HasUser = true
				result.User = u.User.Username()
				result.Password, _ = u.User.Password()
			}
		}
		_ = out.Encode(result)
	}
}
