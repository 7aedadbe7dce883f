package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Environment variables that turn a missing Node.js or Chromium from a skip into a
// failure; CI sets them, so that its tests cannot pass by skipping.
const (
	requireNodeEnv    = "DUCKTAIL_REQUIRE_NODE"
	requireBrowserEnv = "DUCKTAIL_REQUIRE_BROWSER"
)

// chromiumPath is where the Chromium test finds the browser (Debian's chromium package).
const chromiumPath = "/usr/bin/chromium"

// webDir is the npm project of the page and of the Node.js test scripts, relative to this
// package.
const webDir = "../../web"

// needNode returns the node executable and the absolute path of web/ when node is on
// PATH and every one of modules is installed under web/node_modules (`npm ci` in web/).
// Otherwise it skips the test, or fails it when the environment variable requireEnv is 1.
func needNode(t *testing.T, requireEnv string, modules ...string) (node, web string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, requireEnv, "node is not on PATH")
	}
	web, err = filepath.Abs(webDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modules {
		if _, err := os.Stat(filepath.Join(web, "node_modules", m, "package.json")); err != nil {
			missing(t, requireEnv, "npm package "+m+" is not installed; run npm ci in web/")
		}
	}
	return node, web
}

// needChromium skips or fails the test (see needNode) when Chromium is not installed.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		missing(t, requireBrowserEnv, chromiumPath+" is missing; apt-get install chromium")
	}
}

func missing(t *testing.T, requireEnv, why string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s (required: %s=1)", why, requireEnv)
	}
	t.Skipf("%s (set %s=1 to fail instead)", why, requireEnv)
}
