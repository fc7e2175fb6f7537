package admin

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// buildEcho is the route table: every page and action of the admin, one line
// each, with its handler in a file named after it (settings_show.go, …).
func (s *Server) buildEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Logger.SetOutput(io.Discard)
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = s.proxies.ipExtractor()

	// Request ID, logging, panic recovery and the security headers run
	// before routing, so every response has them; then the Host check, so a
	// request for another host reaches no handler, redirect or session
	// lookup — the trailing-slash redirect ("/settings/" -> "/settings": one
	// canonical address per page) answers before any route middleware runs.
	e.Pre(s.requestID, s.accessLog(), s.recoverPanic, s.securityHeaders, s.checkHost,
		middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently}))
	e.Use(auditAddress, s.bodyLimits(), s.crossOrigin, s.loadSession, s.checkCSRF, s.mapBusy)

	s.publicPath = map[string]bool{}
	public := func(method, path string, h echo.HandlerFunc) {
		e.Add(method, path, h)
		s.publicPath[method+" "+path] = true
	}
	public(http.MethodGet, "/healthz", s.healthz)
	public(http.MethodHead, "/healthz", s.healthz)
	public(http.MethodGet, "/readyz", s.readyz)
	public(http.MethodHead, "/readyz", s.readyz)
	public(http.MethodGet, "/static/*", s.static)
	public(http.MethodHead, "/static/*", s.static)
	public(http.MethodGet, "/robots.txt", s.robots)
	public(http.MethodGet, "/setup", s.setupForm)
	public(http.MethodPost, "/setup", s.setupSubmit)
	public(http.MethodGet, "/login", s.loginForm)
	public(http.MethodPost, "/login", s.loginSubmit)
	// /metrics authenticates itself (bearer token or session) and answers
	// 401 instead of redirecting a scraper to the sign-in page.
	public(http.MethodGet, "/metrics", s.metricsHandler)

	g := e.Group("", s.requireAdmin)
	g.GET("/", s.overview)
	g.POST("/overview/checklist/dismiss", s.dismissChecklist)
	g.POST("/logout", s.logout)
	g.GET("/audit", s.audit)
	g.GET("/settings", s.settings)
	g.POST("/settings/password", s.changePassword)
	g.POST("/settings/backup", s.downloadBackup)
	g.POST("/settings/sessions/revoke", s.revokeSessions)
	g.POST("/settings/worldtree", s.saveWorldtreeSettings)
	g.POST("/settings/worldtree/remove", s.removeWorldtreeSettings)
	g.POST("/settings/proposals", s.saveProposalNotifications)
	g.GET("/worldtree", s.worldtreePage)
	gc := g.Group("/guilds", s.requireGuilds)
	gc.GET("", s.guildsList)
	gc.POST("", s.addGuild)
	gc.GET("/:id", s.guildShow)
	gc.POST("/:id/setup", s.saveGuildSetup)
	gc.POST("/:id/document", s.saveGuildDocument) // a whole document: largeBodyRoutes
	gc.POST("/:id/modules/:module", s.saveGuildModuleSettings)
	gc.GET("/:id/history", s.guildHistory)
	gc.GET("/:id/members/search", s.guildMembersSearch)
	gc.POST("/:id/history/:entry/revert", s.revertGuildDocument)
	gm := g.Group("/modules", s.requireModules)
	gm.GET("", s.modulesList)
	gm.GET("/events", s.moduleEvents)
	gm.POST("/restart", s.restartModules)
	gm.GET("/:name", s.moduleShow)
	gm.POST("/:name/enabled", s.toggleModule)
	gm.POST("/:name/restart", s.restartModule)
	gm.POST("/:name/settings", s.saveModuleSettings)
	gm.POST("/:name/jobs/:key/run", s.runModuleJob)
	gm.POST("/:name/jobs/:key/cancel", s.cancelModuleJob)
	gd := g.Group("/discord", s.requireDiscord)
	gd.GET("", s.discordShow)
	gd.GET("/events", s.discordEvents)
	gd.POST("/token", s.saveDiscordToken)
	gd.POST("/token/remove", s.removeDiscordToken)
	gd.POST("/intents", s.saveDiscordIntents)
	gd.POST("/cache", s.saveDiscordCache)
	gd.POST("/reconnect", s.reconnectDiscord)
	ga := g.Group("/assistant", s.requireAssistant)
	ga.GET("", s.assistantShow)
	ga.GET("/events", s.assistantEvents)
	ga.GET("/usage", s.assistantUsageShow)
	ga.POST("", s.saveAssistant)
	ga.POST("/behaviour", s.saveAssistantBehaviour)
	ga.POST("/retention", s.saveAssistantRetention)
	ga.POST("/limits", s.saveAssistantLimits)
	ga.POST("/test", s.testAssistantConnection)
	ga.POST("/transcripts", s.saveAssistantTranscripts, s.requireConversations)
	gac := ga.Group("/conversations", s.requireConversations)
	gac.GET("", s.assistantConversations)
	gac.GET("/events", s.assistantConversationEvents)
	gac.GET("/:id", s.assistantConversationShow)
	gac.POST("/:id/delete", s.deleteAssistantConversation)
	gp := g.Group("/proposals", s.requireProposals)
	gp.GET("", s.proposalsList)
	gp.GET("/events", s.proposalEvents)
	gp.GET("/:id", s.proposalShow)
	gp.POST("/:id/approve", s.approveProposal)
	gp.POST("/:id/reject", s.rejectProposal)
	gp.POST("/:id/rollback", s.rollbackProposal)
	gr := g.Group("/results", s.requireResults)
	gr.GET("", s.resultsList)
	gr.GET("/events", s.resultEvents)
	gr.GET("/:module/:name/:guild", s.resultsShow)
	gr.POST("/:module/:name/:guild/retry", s.retryResults)
	gr.POST("/:module/:name/:guild/pause", s.pauseResults)
	gr.POST("/:module/:name/:guild/unsubscribe", s.unsubscribeResults)
	gr.POST("/:module/:name/:guild/purge", s.purgeResults)
	gt := g.Group("/tasks", s.requireTasks)
	gt.GET("", s.tasksList)
	gt.POST("", s.createTask) // attachments: uploadBodyRoutes
	gt.GET("/new", s.taskNew)
	gt.GET("/events", s.taskEvents)
	gt.GET("/:id", s.taskShow)
	gt.GET("/:id/edit", s.taskEdit)
	gt.POST("/:id/edit", s.updateTask) // attachments: uploadBodyRoutes
	gt.POST("/:id/pause", s.pauseTask)
	gt.POST("/:id/delete", s.deleteTask)
	gt.POST("/:id/run", s.runTaskNow)
	gt.POST("/:id/preview", s.previewTask)
	gt.POST("/:id/runs/:run/posts/:seq/retry", s.retryTaskPost)
	g.GET("/demo", s.demoShow)
	g.POST("/demo/messages", s.postDemoMessage)
	g.POST("/demo/buttons", s.clickDemoButton)
	g.POST("/demo/commands", s.runDemoCommand)
	g.POST("/demo/modals", s.submitDemoModal)
	g.GET("/demo/events", s.demoEvents)
	for _, p := range placeholders {
		g.GET(p.path, s.placeholder(p))
	}
	return e
}

// isPublic reports whether method+path is reachable without a session.
func (s *Server) isPublic(method, path string) bool {
	return s.publicPath[method+" "+path]
}
