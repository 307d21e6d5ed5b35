"""The fleet's words in English and Japanese (fleet.*): the Home tab's fleet view for organizers and participants,
start all / stop all (confirmation, progress, summary, each failure's reason), the scheduled stop's warning and the
organizers' announcement (announce.*)."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

FLEET: Final[dict[str, dict[Lang, str]]] = {
    "fleet.title": {"en": "Contest notebooks", "ja": "コンテストのノートブック"},
    "fleet.summary": {
        "en": "{total} notebooks: {running} running, {stopped} stopped, {attention} need attention. As of {when}.",
        "ja": "ノートブック {total} 台: 稼働中 {running} 台、停止中 {stopped} 台、要対応 {attention} 台。{when} 時点。",
    },
    "fleet.attention": {"en": "*Needs attention*", "ja": "*要対応*"},
    "fleet.healthy": {"en": "*Running as expected*", "ja": "*正常*"},
    "fleet.page": {
        "en": "Showing notebooks {first}–{last} of {count} that need attention.",
        "ja": "要対応 {count} 台のうち {first}–{last} 台目を表示しています。",
    },
    "fleet.row": {
        "en": "*{name}* · {owner} · {state} · JupyterLab {jupyter} · memory {memory} · {machine}\n"
        "Today: OOM kills {kills}, restarts {restarts}{flags}",
        "ja": "*{name}* · {owner} · {state} · JupyterLab {jupyter} · メモリ {memory} · {machine}\n"
        "今日: OOM キル {kills} 件、再起動 {restarts} 件{flags}",
    },
    "fleet.line": {
        "en": "{name} · {owner} · {state} · JupyterLab {jupyter} · memory {memory} · OOM kills {kills}",
        "ja": "{name} · {owner} · {state} · JupyterLab {jupyter} · メモリ {memory} · キル {kills} 件",
    },
    "fleet.down": {
        "en": " · down {total} min: platform {platform}, own {own}, unknown {unknown}",
        "ja": " · 停止 {total} 分: 基盤 {platform}、本人 {own}、不明 {unknown}",
    },
    "fleet.down.short": {
        "en": " · down {platform}/{own}/{unknown} min (platform/own/unknown)",
        "ja": " · 停止 {platform}/{own}/{unknown} 分 (基盤/本人/不明)",
    },
    "fleet.mine": {
        "en": "*Your notebook {name}*: {state} · JupyterLab {jupyter} · memory {memory} · {machine}\n"
        "Today: OOM kills {kills}, restarts {restarts}{flags}",
        "ja": "*あなたのノートブック {name}*: {state} · JupyterLab {jupyter} · メモリ {memory} · {machine}\n"
        "今日: OOM キル {kills} 件、再起動 {restarts} 件{flags}",
    },
    "fleet.mine.none": {
        "en": "No contest notebook is registered to you. Ask an organizer if you expected one.",
        "ja": "あなたのコンテスト用ノートブックは登録されていません。必要なら運営に連絡してください。",
    },
    "fleet.home.slow": {
        "en": "{service} did not answer in time, so the notebooks are not shown. Press Refresh to try again.",
        "ja": "{service} の応答が間に合わなかったため、ノートブックを表示できません。「更新」を押して再試行してください。",
    },
    "fleet.home.start_queued": {
        "en": ":arrow_forward: Start all is under way: its progress and summary are in {channel}. "
        "Press Refresh to see the notebooks.",
        "ja": ":arrow_forward: 一括起動を開始しました。進捗と結果は {channel} に表示されます。"
        "「更新」を押すとノートブックを表示します。",
    },
    "fleet.home.stop_queued": {
        "en": ":stop_button: Stop all is under way: its progress and summary are in {channel}. "
        "Press Refresh to see the notebooks.",
        "ja": ":stop_button: 一括停止を開始しました。進捗と結果は {channel} に表示されます。"
        "「更新」を押すとノートブックを表示します。",
    },
    "fleet.unknown": {"en": "unknown", "ja": "不明"},
    "fleet.memory.no_data": {"en": "no data", "ja": "データなし"},
    "fleet.no_owner": {"en": "(no owner)", "ja": "(所有者なし)"},
    "fleet.jupyter.up": {"en": "up", "ja": "稼働"},
    "fleet.jupyter.down": {"en": "down", "ja": "停止"},
    "fleet.why.down": {"en": " · :red_circle: JupyterLab down", "ja": " · :red_circle: JupyterLab 停止"},
    "fleet.why.crash_loop": {
        "en": " · :repeat: crash loop: {count} automatic restarts within the hour",
        "ja": " · :repeat: 再起動の繰り返し: 1 時間以内に自動再起動 {count} 件",
    },
    "fleet.why.stopped": {
        "en": " · :black_square_for_stop: stopped while the contest runs",
        "ja": " · :black_square_for_stop: コンテスト中に停止",
    },
    "fleet.why.memory": {"en": " · :warning: memory {percent}%", "ja": " · :warning: メモリ {percent}%"},
    "fleet.flag.paused": {"en": " · automatic restarts paused", "ja": " · 自動再起動を一時停止中"},
    "fleet.flag.opted_out": {"en": " · opted out (medic-auto=off)", "ja": " · 対象外 (medic-auto=off)"},
    "fleet.flag.held": {"en": " · stopped by an organizer", "ja": " · 運営が停止"},
    "fleet.button.start_all": {"en": "Start all", "ja": "すべて起動"},
    "fleet.button.stop_all": {"en": "Stop all", "ja": "すべて停止"},
    "fleet.button.refresh": {"en": "Refresh", "ja": "更新"},
    "fleet.button.next": {"en": "Next page", "ja": "次のページ"},
    "fleet.button.restart": {"en": "Restart", "ja": "再起動"},
    "fleet.button.start": {"en": "Start", "ja": "起動"},
    "fleet.button.resume": {"en": "Resume automatic restarts", "ja": "自動再起動を再開"},
    "fleet.confirm.title": {"en": "Are you sure?", "ja": "実行しますか?"},
    "fleet.confirm.go": {"en": "Yes, go ahead", "ja": "実行する"},
    "fleet.confirm.cancel": {"en": "Cancel", "ja": "キャンセル"},
    "fleet.confirm.start": {
        "en": "Start {count} notebooks: {names}.",
        "ja": "ノートブック {count} 台を起動します: {names}。",
    },
    "fleet.confirm.stop": {
        "en": "Stop {count} notebooks: {names}. Their owners lose what is not saved.",
        "ja": "ノートブック {count} 台を停止します: {names}。保存していない作業は失われます。",
    },
    "fleet.confirm.none": {
        "en": "Nothing to do: no notebook is in a state this acts on.",
        "ja": "対象のノートブックはありません。",
    },
    "fleet.confirm.left_alone": {
        "en": "Left as they are: {count} ({names}).",
        "ja": "対象外のまま: {count} 台 ({names})。",
    },
    "fleet.more": {"en": "{names} and {count} more", "ja": "{names} ほか {count} 台"},
    "fleet.progress.start": {
        "en": ":hourglass_flowing_sand: Starting {total} notebooks: {done} done, {running} in progress, "
        "{waiting} waiting to retry, {failed} failed.",
        "ja": ":hourglass_flowing_sand: ノートブック {total} 台を起動中: 完了 {done}、実行中 {running}、"
        "再試行待ち {waiting}、失敗 {failed}。",
    },
    "fleet.progress.stop": {
        "en": ":hourglass_flowing_sand: Stopping {total} notebooks: {done} done, {running} in progress, "
        "{waiting} waiting to retry, {failed} failed.",
        "ja": ":hourglass_flowing_sand: ノートブック {total} 台を停止中: 完了 {done}、実行中 {running}、"
        "再試行待ち {waiting}、失敗 {failed}。",
    },
    "fleet.summary.start": {
        "en": ":white_check_mark: Start all finished: {done} of {total} started.",
        "ja": ":white_check_mark: 一括起動が終わりました: {total} 台中 {done} 台を起動。",
    },
    "fleet.summary.stop": {
        "en": ":white_check_mark: Stop all finished: {done} of {total} stopped.",
        "ja": ":white_check_mark: 一括停止が終わりました: {total} 台中 {done} 台を停止。",
    },
    "fleet.summary.failures": {"en": "Failed ({count}):", "ja": "失敗 ({count} 台):"},
    "fleet.failure": {"en": "• {name}: {reason}", "ja": "• {name}: {reason}"},
    "fleet.reason.quota": {
        "en": "over a Compute Engine quota ({detail}); raise the quota or stop others first",
        "ja": "Compute Engine の割り当てを超えています ({detail})。割り当てを増やすか他を先に停止してください",
    },
    "fleet.reason.busy": {
        "en": "still busy after {tries} tries (Workbench: unable to queue the operation)",
        "ja": "{tries} 回試しても処理中でした (Workbench: unable to queue the operation)",
    },
    "fleet.reason.rate": {
        "en": "API rate limit still reached after {tries} tries",
        "ja": "{tries} 回試しても API のレート制限に達していました",
    },
    "fleet.reason.stockout": {
        "en": "no {what} free in {zone} after {tries} tries (Google's stockout); {elsewhere}",
        "ja": "{tries} 回試しても {zone} に {what} の空きがありませんでした（Google の在庫切れ）。{elsewhere}",
    },
    "fleet.stockout.elsewhere": {
        "en": "zones Google says have capacity: {zones}",
        "ja": "Google によると空きのあるゾーン: {zones}",
    },
    "fleet.stockout.nowhere": {
        "en": "Google named no zone with capacity",
        "ja": "Google は空きのあるゾーンを示していません",
    },
    "fleet.confirm.gpu": {
        "en": ":warning: {count} of them have a GPU ({names}): a stopped GPU VM may not come back. Its start asks "
        "Google for a GPU again, and a zone that has none free refuses it (a stockout) until one is. To keep them "
        "running, use *Stop all but GPU notebooks*.",
        "ja": ":warning: うち {count} 台は GPU 付きです（{names}）。停止した GPU VM は戻らないことがあります。"
        "起動時に GPU を Google に改めて要求し、ゾーンに空きがなければ空くまで拒否されます（在庫切れ）。"
        "動かしたままにするには *GPU 以外をすべて停止* を使ってください。",
    },
    "fleet.button.stop_all_keep_gpus": {"en": "Stop all but GPU notebooks", "ja": "GPU 以外をすべて停止"},
    "fleet.stockout.machine": {"en": "machine of this type", "ja": "このマシンタイプ"},
    "fleet.stockout.zone": {"en": "its zone", "ja": "そのゾーン"},
    "fleet.stockout.waiting": {
        "en": ":hourglass_flowing_sand: Your notebook {name} is waiting for {what} in {zone}, try {tries}: Google has "
        "none free there right now. notebook-medic tries again in {wait}, for up to {patience} in all; "
        "nothing for you to do.",
        "ja": ":hourglass_flowing_sand: ノートブック {name} は {zone} の {what} の空きを待っています（{tries} 回目）。"
        "いま Google に空きがありません。notebook-medic が {wait}後にもう一度試します（最長 {patience}）。"
        "操作は不要です。",
    },
    "capacity.resized": {
        "en": ":information_source: *{name}* already has its new machine type {machine}: it is stopped on it, waiting "
        "for capacity.",
        "ja": ":information_source: *{name}* はすでに新しいマシンタイプ {machine} に変更済みで、停止したまま空きを"
        "待っています。",
    },
    "capacity.gave_up": {
        "en": ":x: *{name}* was not started: {reason}. It is still stopped; press Start again later, or ask an "
        "organizer.",
        "ja": ":x: *{name}* を起動できませんでした: {reason}。停止したままです。あとでもう一度起動するか、運営に"
        "相談してください。",
    },
    "capacity.alert": {
        "en": "Not started after waiting {patience} for capacity: {reason}.",
        "ja": "{patience} 空きを待っても起動できませんでした: {reason}。",
    },
    "fleet.reason.unavailable": {
        "en": "Workbench did not answer after {tries} tries ({detail})",
        "ja": "{tries} 回試しても Workbench が応答しませんでした ({detail})",
    },
    "fleet.reason.refused": {"en": "refused: {detail}", "ja": "拒否されました: {detail}"},
    "fleet.reason.gone": {"en": "the notebook no longer exists", "ja": "ノートブックが存在しません"},
    "fleet.run.start": {"en": ":arrow_forward: *Start all*, asked by {who}.", "ja": ":arrow_forward: *一括起動* ({who} の依頼)。"},
    "fleet.run.stop": {"en": ":stop_button: *Stop all*, asked by {who}.", "ja": ":stop_button: *一括停止* ({who} の依頼)。"},
    "fleet.run.schedule": {"en": "the contest's schedule", "ja": "コンテストのスケジュール"},
    "fleet.run.busy_start": {
        "en": ":hourglass: Start all is already under way (since {since}): your press started nothing. Its progress "
        "is in the organizers' channel.",
        "ja": ":hourglass: 一括起動はすでに実行中です ({since} から)。今回の操作では何も起動していません。"
        "進捗は運営チャンネルにあります。",
    },
    "fleet.run.busy_stop": {
        "en": ":hourglass: Stop all is already under way (since {since}): your press stopped nothing. Its progress "
        "is in the organizers' channel.",
        "ja": ":hourglass: 一括停止はすでに実行中です ({since} から)。今回の操作では何も停止していません。"
        "進捗は運営チャンネルにあります。",
    },
    "announce.header": {
        "en": ":mega: Message from the organizers of {contest}:",
        "ja": ":mega: {contest} 運営からのお知らせ:",
    },
    "announce.confirm": {
        "en": ":mega: This announcement goes by DM to each notebook owner (*{count}* in all):",
        "ja": ":mega: このお知らせをノートブックの所有者 *{count}* 人に DM で送ります:",
    },
    "announce.unowned": {
        "en": "Notebooks with no owner Slack could know: {count}; nobody is told about those.",
        "ja": "所有者が分からないノートブックが {count} 台あります。それらには誰にも届きません。",
    },
    "announce.button.open": {"en": "Announce…", "ja": "お知らせ…"},
    "announce.button.send": {"en": "Send", "ja": "送信"},
    "announce.button.cancel": {"en": "Cancel", "ja": "キャンセル"},
    "announce.modal.title": {"en": "Announce", "ja": "お知らせ"},
    "announce.modal.label": {"en": "Message to every notebook owner", "ja": "すべての所有者へのメッセージ"},
    "announce.modal.next": {"en": "Next", "ja": "次へ"},
    "announce.usage": {
        "en": "Write the announcement after the word: `/restart-notebook announce <text>` (at most {most} characters).",
        "ja": "`/restart-notebook announce <本文>` の形で本文を書いてください ({most} 文字まで)。",
    },
    "announce.cancelled": {"en": "Announcement cancelled: nothing was sent.", "ja": "お知らせを取り消しました。何も送っていません。"},
    "announce.queued": {
        "en": ":mega: Sending the announcement; the summary comes in {channel}.",
        "ja": ":mega: お知らせを送信中です。結果は {channel} に投稿します。",
    },
    "announce.asked": {"en": ":mega: *Announcement*, asked by {who}.", "ja": ":mega: *お知らせ* ({who} の依頼)。"},
    "announce.progress": {"en": "Reached {done} of {total} so far…", "ja": "{total} 人中 {done} 人に送信済み…"},
    "announce.summary": {
        "en": ":mega: Announcement sent: reached {reached} of {total} owners.",
        "ja": ":mega: お知らせ送信完了: 所有者 {total} 人中 {reached} 人に届きました。",
    },
    "announce.unfinished": {
        "en": "It ran out of time before reaching everyone; the rest were not sent to.",
        "ja": "時間切れのため、残りの所有者には送信していません。",
    },
    "announce.missed": {"en": "• {owner}: {reason}", "ja": "• {owner}: {reason}"},
    "announce.miss.no_user": {"en": "no Slack user for the email", "ja": "このメールの Slack ユーザーがいません"},
    "announce.miss.deactivated": {"en": "the Slack account is deactivated", "ja": "Slack アカウントが無効です"},
    "announce.miss.failed": {"en": "the DM failed with {error}", "ja": "DM の送信に失敗しました ({error})"},
    "fleet.warning": {
        "en": ":alarm_clock: Save your work: your notebook {name} stops at {time} ({minutes} minutes from now), "
        "when the contest ends.",
        "ja": ":alarm_clock: 作業を保存してください: ノートブック {name} はコンテスト終了の {time} "
        "({minutes} 分後) に停止します。",
    },
}
