-- GET without any Authorization header (the 401 scenario).
wrk.method = "GET"
dofile("wrk/report.lua")
