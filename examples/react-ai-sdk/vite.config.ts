import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev`: the page on http://localhost:5173, its /api requests passed to a
// callwright server on :8000 (`callwright serve`). The Host header stays the page's, so
// the server sees a same-origin request. `npm run build` writes dist/ for server.py.
export default defineConfig({
  plugins: [react()],
  server: {
    // changeOrigin stays false: callwright checks the Origin against the Host it sees.
    proxy: { "/api": { target: "http://127.0.0.1:8000", changeOrigin: false } },
  },
});
