"""What `readiness` knows about servers and watchers: the programs, their default ports and
the lines they print once they are up."""

from __future__ import annotations

# Output lines that mean "up" (POSIX extended regular expressions, as `grep -E`).
READY_LINES: tuple[str, ...] = (
    r"Local:",  # vite, next, astro, nuxt
    r"[Rr]eady in",  # vite, next
    r"ready - started server",  # next (older)
    r"Uvicorn running on",
    r"Application startup complete",
    r"Running on https?://",  # flask, werkzeug
    r"Serving HTTP on",  # python -m http.server
    r"Starting development server at",  # django
    r"[Ll]istening (on|at)",  # gunicorn, puma, node servers
    r"[Ss]erver (is )?(running|started|listening)",
    r"started server on",
    r"You can now view",  # create-react-app, streamlit
    r"Available on:",  # http-server
    r"Serving!",  # serve
    r"[Cc]ompiled successfully",  # webpack, angular
    r"webpack [0-9.]+ compiled",
    r"Watching for file changes",  # tsc --watch, django
    r"[Ww]aiting for (file )?changes",  # vitest, nodemon, esbuild
    r"\[nodemon\] watching",
    r"Watch Usage",  # jest --watch
    r"[Ww]atching for changes",
    r"Web Server is available at",  # hugo
    r"Server address:",  # jekyll
)

# Program -> {first argument (or "" for any) -> default port (0: none known)}.
# A program listed with "" runs long unless its first argument is in FINITE.
SERVERS: dict[str, dict[str, int]] = {
    "vite": {"": 5173, "preview": 4173},
    "next": {"dev": 3000, "start": 3000},
    "nuxt": {"dev": 3000, "preview": 3000, "start": 3000},
    "nuxi": {"dev": 3000, "preview": 3000},
    "astro": {"dev": 4321, "preview": 4321},
    "remix": {"dev": 3000},
    "react-scripts": {"start": 3000},
    "ng": {"serve": 4200},
    "vue-cli-service": {"serve": 8080},
    "webpack": {"serve": 8080},
    "webpack-dev-server": {"": 8080},
    "parcel": {"": 1234, "serve": 1234},
    "http-server": {"": 8080},
    "live-server": {"": 8080},
    "serve": {"": 3000},
    "nodemon": {"": 0},
    "ts-node-dev": {"": 0},
    "tsx": {"watch": 0},
    "flask": {"run": 5000},
    "uvicorn": {"": 8000},
    "hypercorn": {"": 8000},
    "gunicorn": {"": 8000},
    "daphne": {"": 8000},
    "fastapi": {"dev": 8000, "run": 8000},
    "streamlit": {"run": 8501},
    "jupyter": {"notebook": 8888, "lab": 8888, "server": 8888},
    "mkdocs": {"serve": 8000},
    "hugo": {"server": 1313, "serve": 1313},
    "jekyll": {"serve": 4000, "server": 4000, "s": 4000},
    "rails": {"server": 3000, "s": 3000},
    "django-admin": {"runserver": 8000},
    "manage.py": {"runserver": 8000},
    "http.server": {"": 8000},
    "air": {"": 0},
    "watchexec": {"": 0},
    "ptw": {"": 0},
    "pytest-watch": {"": 0},
}
FINITE = frozenset({"build", "optimize", "--version", "-v", "--help", "-h", "help", "version"})

# Programs whose `--watch` / `-w` (and the like) make them run until stopped.
WATCHERS = frozenset(
    {
        "jest",
        "vitest",
        "tsc",
        "node",
        "webpack",
        "rollup",
        "esbuild",
        "babel",
        "sass",
        "tailwindcss",
        "mocha",
        "nodemon",
        "parcel",
        "tsup",
        "swc",
        "cargo",
    }
)
WATCH_FLAGS = frozenset({"--watch", "-w", "--watchAll", "--watch-all"})
WATCH_ARGS = {"vitest": frozenset({"watch", "dev"}), "cargo": frozenset({"watch"})}

# package.json script names that, by convention, run until stopped.
LONG_SCRIPTS = frozenset({"dev", "start", "serve", "watch", "preview", "develop", "server"})
RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
# Programs that only run another one (their first non-option word is the program).
PASS_THROUGH = frozenset({"npx", "bunx", "exec", "env", "nohup", "pnpx"})
RUN_VIA = {"poetry": "run", "uv": "run", "pipenv": "run", "pdm": "run", "hatch": "run"}

# Options naming the port (or a host:port) a server listens on.
PORT_OPTIONS = frozenset({"--port", "-p", "--bind", "-b", "--listen", "-l", "--http"})
PORT_ENV = ("PORT", "FLASK_RUN_PORT")
