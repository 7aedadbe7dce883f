package api

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// uiDist is the live table page as built by `make ui` (web/, bundled by Vite into
// api/ui/dist and committed, so that a Go build needs no Node.js).
//
//go:embed all:ui/dist
var uiDist embed.FS

// uiContentTypes fixes the media types of the files the bundle holds, whatever the
// host's mime.types says; other extensions fall back to mime.TypeByExtension.
var uiContentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".json":  "application/json",
}

// uiPolicy is the Content-Security-Policy of the page: its own scripts and styles only,
// and fetch/EventSource to any http(s) origin, since the page may be pointed at another
// ducktail than the one serving it. It may not be framed.
const uiPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' https: http:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiFile is one file of the bundle with the headers it is served with.
type uiFile struct {
	body        []byte
	contentType string
	etag        string
	cache       string
}

// uiFiles is the bundle by path relative to its root ("index.html", "assets/…").
type uiFiles map[string]uiFile

// UIHandler returns a handler serving the live table page, with paths relative to its
// root: "/" and "/index.html" are the page, "/assets/…" its content-hashed scripts and
// styles. Assets are cached for a year as immutable; the page is revalidated on every
// load by its ETag. Only GET and HEAD are allowed, and no token is needed: the files hold
// no data, the page asks for a token. Server mounts it at /ui/; tests also serve it from
// other origins.
func UIHandler() http.Handler {
	files := uiFiles{}
	err := fs.WalkDir(uiDist, "ui/dist", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := uiDist.ReadFile(name)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(name, "ui/dist/")
		sum := sha256.Sum256(body)
		f := uiFile{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, cache: "no-cache"}
		if f.contentType = uiContentTypes[path.Ext(rel)]; f.contentType == "" {
			f.contentType = mime.TypeByExtension(path.Ext(rel))
		}
		if strings.HasPrefix(rel, "assets/") {
			f.cache = "public, max-age=31536000, immutable"
		}
		files[rel] = f
		return nil
	})
	if err != nil {
		// The bundle is compiled in: failing to read it is a broken build.
		panic("api: reading the embedded UI bundle: " + err.Error())
	}
	return files
}

// ServeHTTP implements http.Handler.
func (u uiFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := u[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", f.cache)
	h.Set("X-Content-Type-Options", "nosniff")
	if path.Ext(name) == ".html" {
		h.Set("Content-Security-Policy", uiPolicy)
		h.Set("Referrer-Policy", "no-referrer")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}

// ui serves the live table page under /ui/ and redirects /ui there, keeping the query
// (the browser keeps the fragment, where the page takes its settings from).
func (s *Server) ui() http.Handler {
	files := http.StripPrefix("/ui", UIHandler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ui" {
			files.ServeHTTP(w, r)
			return
		}
		target := "ui/"
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", target)
		w.WriteHeader(http.StatusMovedPermanently)
	})
}
