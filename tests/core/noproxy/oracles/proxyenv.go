// proxyenv prints what Go's net/http ProxyFromEnvironment decides for each URL argument,
// one JSON object per line, under the process environment it was started with.
package main

import (
	"encoding/json"
	"net/http"
	"os"
)

type result struct {
	URL      string `json:"url"`
	Decision string `json:"decision"`
	Proxy    string `json:"proxy,omitempty"`
	Error    string `json:"error,omitempty"`
}

func main() {
	out := json.NewEncoder(os.Stdout)
	for _, target := range os.Args[1:] {
		r := result{URL: target}
		req, err := http.NewRequest("GET", target, nil)
		if err != nil {
			r.Decision, r.Error = "error", err.Error()
		} else if proxy, err := http.ProxyFromEnvironment(req); err != nil {
			r.Decision, r.Error = "error", err.Error()
		} else if proxy == nil {
			r.Decision = "direct"
		} else {
			r.Decision, r.Proxy = "proxy", proxy.String()
		}
		_ = out.Encode(r)
	}
}
