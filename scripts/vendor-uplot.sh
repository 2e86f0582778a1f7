#!/usr/bin/env bash
# Refreshes vendor/uplot/ (the chart library report.html embeds) from the npm registry, at the
# pinned version, and checks the package against its pinned integrity hash before copying the
# minified script, its stylesheet and its licence. Run it to update uPlot: change VERSION and
# INTEGRITY together (from `npm view uplot@<version> dist.integrity`).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="1.6.32"
INTEGRITY="sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@${VERSION}" >/dev/null)
tarball="$work/uplot-${VERSION}.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "vendor-uplot: uplot-${VERSION}.tgz has integrity $got, expected $INTEGRITY" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work"
mkdir -p vendor/uplot
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$work/package/LICENSE" vendor/uplot/
(cd vendor/uplot && sha256sum uPlot.iife.min.js uPlot.min.css LICENSE > SHA256SUMS)
echo "uplot ${VERSION} (npm, ${INTEGRITY})" > vendor/uplot/VERSION
echo "vendor-uplot: vendor/uplot/ holds uPlot ${VERSION}"
