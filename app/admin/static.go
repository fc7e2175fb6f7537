package admin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// asset is one embedded static file.
type asset struct {
	name   string // "app.css"
	hashed string // "app.1a2b3c4d.css"
	ctype  string
	etag   string
	data   []byte
}

// assetSet maps logical and content-hashed names to files, computed once at
// start-up from the embedded FS (Miniflux's checksum approach): a changed file
// gets a new URL, so hashed URLs can be cached forever.
type assetSet struct {
	byName   map[string]*asset
	byHashed map[string]*asset
}

func loadAssets(fsys fs.FS) (*assetSet, error) {
	set := &assetSet{byName: map[string]*asset{}, byHashed: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		h := hex.EncodeToString(sum[:])[:8]
		ext := path.Ext(p)
		a := &asset{
			name:   p,
			hashed: strings.TrimSuffix(p, ext) + "." + h + ext,
			ctype:  mime.TypeByExtension(ext),
			etag:   `"` + h + `"`,
			data:   data,
		}
		if a.ctype == "" {
			a.ctype = http.DetectContentType(data)
		}
		set.byName[a.name] = a
		set.byHashed[a.hashed] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("admin: load static assets: %w", err)
	}
	for _, required := range []string{"app.css"} {
		if set.byName[required] == nil {
			return nil, fmt.Errorf("admin: load static assets: %s is missing", required)
		}
	}
	return set, nil
}

// url returns the content-hashed URL of a logical asset name.
func (a *assetSet) url(name string) string {
	if as := a.byName[name]; as != nil {
		return "/static/" + as.hashed
	}
	return ""
}

// static serves /static/<name>.<hash>.<ext> with an immutable year-long cache
// and the unhashed name with revalidation only (for hand-written links).
func (s *Server) static(c echo.Context) error {
	name := c.Param("*")
	if a := s.assets.byHashed[name]; a != nil {
		return serveAsset(c, a, "public, max-age=31536000, immutable")
	}
	if a := s.assets.byName[name]; a != nil {
		return serveAsset(c, a, "no-cache")
	}
	return echo.NewHTTPError(http.StatusNotFound)
}

func (s *Server) robots(c echo.Context) error {
	if a := s.assets.byName["robots.txt"]; a != nil {
		return serveAsset(c, a, "public, max-age=86400")
	}
	return c.String(http.StatusOK, "User-agent: *\nDisallow: /\n")
}

func serveAsset(c echo.Context, a *asset, cacheControl string) error {
	h := c.Response().Header()
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", a.etag)
	h.Set("Content-Type", a.ctype)
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(a.data))
	return nil
}
