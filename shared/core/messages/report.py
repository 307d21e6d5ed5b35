"""The report after the contest, in English and Japanese (report.*): the organizers' summary message that
carries the CSV, its totals, the participants with the most kills, and what the audit trail could not attribute.
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

REPORT: Final[dict[str, dict[Lang, str]]] = {
    "report.title": {
        "en": ":bar_chart: *Contest report* {since} – {until}: {notebooks} notebooks, {participants} participants.",
        "ja": ":bar_chart: *コンテストのレポート* {since} – {until}: ノートブック {notebooks} 台、参加者 {participants} 人。",
    },
    "report.totals": {
        "en": "OOM kills: {kills}. Cells stopped, kernels kept: {kept}. Restarts: {automatic} automatic, {manual} manual ({failed} did not finish). "
        "JupyterLab down: at least {minutes} min in all. Resizes: {resizes}. Notebook-hours: at most {hours}, "
        "about ${cost} at MACHINE_PRICES.",
        "ja": "OOM キル {kills} 件、セル停止 (カーネル保持) {kept} 件、自動再起動 {automatic} 件・手動再起動 {manual} 件 (完了しなかったもの {failed} 件)、"
        "JupyterLab の停止は合計 {minutes} 分以上、マシン変更 {resizes} 件、稼働は最大 {hours} ノートブック時間、"
        "MACHINE_PRICES での概算 ${cost}。",
    },
    "report.gpu_freed": {
        "en": "GPU memory freed from processes whose kernel was gone (the GPU guard): {count}.",
        "ja": "カーネル終了後も GPU メモリを保持していたプロセスの解放 (GPU ガード): {count} 件。",
    },
    "report.totals.unpriced": {
        "en": "OOM kills: {kills}. Cells stopped, kernels kept: {kept}. Restarts: {automatic} automatic, {manual} manual ({failed} did not finish). "
        "JupyterLab down: at least {minutes} min in all. Resizes: {resizes}. Notebook-hours: at most {hours}; no "
        "cost: MACHINE_PRICES has no price for {types}.",
        "ja": "OOM キル {kills} 件、セル停止 (カーネル保持) {kept} 件、自動再起動 {automatic} 件・手動再起動 {manual} 件 (完了しなかったもの {failed} 件)、"
        "JupyterLab の停止は合計 {minutes} 分以上、マシン変更 {resizes} 件、稼働は最大 {hours} ノートブック時間。"
        "MACHINE_PRICES に {types} の価格がないため費用は出せません。",
    },
    "report.most_kills": {
        "en": "Most kills:",
        "ja": "OOM キルが多かった参加者:",
    },
    "report.row": {
        "en": "• {participant}: OOM kills {kills}, restarts {restarts}, down {minutes} min",
        "ja": "• {participant}: キル {kills} 件、再起動 {restarts} 件、停止 {minutes} 分",
    },
    "report.downtime": {
        "en": "Minutes down by cause (see the CSV's down_min_* columns): platform {platform}, participants' own {own}, "
        "unknown {unknown}; {open} outages still open at the end, cut there.",
        "ja": "原因別の停止時間 (CSV の down_min_* 列): 基盤 {platform} 分、参加者自身 {own} 分、不明 {unknown} 分。"
        "終了時点でまだ続いていた停止 {open} 件は終了時刻で打ち切り。",
    },
    "report.most_platform": {
        "en": "Most time down on the platform's side (where time extensions are usually owed):",
        "ja": "基盤側の停止が長かった参加者 (時間延長の検討対象):",
    },
    "report.row.platform": {
        "en": "• {participant}: platform {platform} min, own {own} min, unknown {unknown} min",
        "ja": "• {participant}: 基盤 {platform} 分、本人 {own} 分、不明 {unknown} 分",
    },
    "report.gaps": {
        "en": "Not attributed (the audit log has gaps):",
        "ja": "帰属できなかったもの (監査ログに欠けがあります):",
    },
    "report.gap.duplicates": {
        "en": "• entries seen twice, counted once: {count}",
        "ja": "• 重複したエントリ {count} 件 (1 回として数えました)",
    },
    "report.gap.unsealed": {
        "en": "• entries written like the bot's without its seal, not counted (someone else wrote them): {count}",
        "ja": "• ボットの封印のない、ボットを装ったエントリ {count} 件 (ほかの誰かが書いたもの、数えていません)",
    },
    "report.gap.unnamed_kills": {
        "en": "• kills whose notebook could not be named or whose evidence did not hold up: {count}",
        "ja": "• ノートブックを特定できなかった、または根拠が確かでなかったキル {count} 件",
    },
    "report.gap.without_outcome": {
        "en": "• kills with no outcome in the log ({count}): {instances}",
        "ja": "• ログに結果がないキル {count} 件: {instances}",
    },
    "report.gap.restarts_without_kill": {
        "en": "• automatic restarts whose kill is not in the log (their downtime is not counted): {count}",
        "ja": "• キルの記録がない自動再起動 {count} 件: その停止時間は数えていません",
    },
    "report.gap.unknown_owner": {
        "en": "• notebooks with no known owner: {instances}",
        "ja": "• 所有者が分からないノートブック: {instances}",
    },
    "report.csv": {
        "en": "Every participant's row is in the CSV ({file}). Hours are the window less the bot's stops: an upper "
        "bound (docs/operations.md).",
        "ja": "参加者ごとの行は CSV ({file}) にあります。稼働時間は期間からボットの停止を除いたもので、上限の値です "
        "(docs/operations.md)。",
    },
    "report.posted": {
        "en": "Posted to {channel} with {file}.",
        "ja": "{channel} に {file} 付きで投稿しました。",
    },
    "report.post_failed": {
        "en": "Not posted to {channel}: {error}. The CSV is written; post it by hand.",
        "ja": "{channel} に投稿できませんでした: {error}。CSV は書き出してあります。手で投稿してください。",
    },
}
