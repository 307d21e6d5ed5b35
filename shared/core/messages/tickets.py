"""The words of help tickets (issue 46), in English and Japanese: the participant's "Get help" modal and the DMs that
follow their ticket, the ticket in the organizers' channel with its buttons, and the timers' re-posts and reminders."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

TICKETS: Final[dict[str, dict[Lang, str]]] = {
    # ---- the participant ---------------------------------------------------------------------
    "ticket.button.help": {"en": "Get help", "ja": "ヘルプを依頼"},
    "ticket.modal.title": {"en": "Get help", "ja": "ヘルプを依頼"},
    "ticket.modal.submit": {"en": "Send", "ja": "送信"},
    "ticket.modal.close": {"en": "Cancel", "ja": "キャンセル"},
    "ticket.modal.what": {"en": "What is wrong?", "ja": "どのような問題ですか?"},
    "ticket.modal.text": {"en": "Tell the organizers more (optional)", "ja": "詳しい状況 (任意)"},
    "ticket.category.slow": {"en": "My notebook is slow or stuck", "ja": "ノートブックが遅い・固まっている"},
    "ticket.category.data": {"en": "My files or data are gone", "ja": "ファイルやデータが消えた"},
    "ticket.category.error": {"en": "An error page (502, 503, ...)", "ja": "エラーページ (502、503 など)"},
    "ticket.category.start": {"en": "My notebook does not start", "ja": "ノートブックが起動しない"},
    "ticket.category.other": {"en": "Something else", "ja": "その他"},
    "ticket.modal.sent": {
        "en": "Sent to the organizers. You will get a direct message with your ticket's number, and another at "
        "each change.",
        "ja": "運営に送信しました。チケット番号をダイレクトメッセージでお知らせし、状況が変わるたびにお伝えします。",
    },
    "ticket.modal.too_often": {
        "en": "You have just asked: the organizers have your requests. Wait a minute before asking again.",
        "ja": "先ほど依頼を受け付けました。運営は受け取っています。1 分ほど待ってから再度依頼してください。",
    },
    "ticket.dm.opened": {
        "en": "Your request for help is ticket *#{number}*. An organizer will pick it up; you will be told here "
        "when they do and when it is resolved.",
        "ja": "ヘルプの依頼はチケット *#{number}* になりました。運営が対応を始めたときと解決したときに、ここでお知らせします。",
    },
    "ticket.dm.claimed": {"en": "Ticket *#{number}*: {who} is on it.", "ja": "チケット *#{number}*: {who} が対応中です。"},
    "ticket.dm.handover": {
        "en": "Ticket *#{number}*: handed over; it waits for the next organizer.",
        "ja": "チケット *#{number}*: 引き継ぎ中です。次の運営メンバーの対応をお待ちください。",
    },
    "ticket.dm.resolved": {
        "en": "Ticket *#{number}* was resolved by {who}: {note}",
        "ja": "チケット *#{number}* は {who} が解決しました: {note}",
    },
    "ticket.dm.limit": {
        "en": "You opened {most} requests for help in the last hour, the most there may be: the organizers have "
        "them. Add to the open ones in a direct message to an organizer, or ask again later.",
        "ja": "この 1 時間に {most} 件のヘルプを依頼済みで、これが上限です。運営は受け取っています。追加の情報は運営メンバーに"
        "直接お送りいただくか、しばらくしてから再度依頼してください。",
    },
    # ---- the organizers ----------------------------------------------------------------------
    "ticket.title": {"en": "*Help ticket #{number}* from {participant}: {category}",
                     "ja": "*ヘルプチケット #{number}* ({participant}): {category}"},
    "ticket.said": {"en": "They wrote: {text}", "ja": "本文: {text}"},
    "ticket.notebook": {"en": "Notebook *{instance}*: {state}, health {health}, machine `{machine}`. {history}",
                        "ja": "ノートブック *{instance}*: {state}、ヘルス {health}、マシン `{machine}`。{history}"},
    "ticket.no_notebook": {"en": "No notebook owned by them was found.",
                           "ja": "この参加者のノートブックは見つかりませんでした。"},
    "ticket.unread": {"en": "Their notebook could not be read: {error}",
                      "ja": "ノートブックを読み取れませんでした: {error}"},
    "ticket.history": {"en": "Out-of-memory kills recorded: {kills} (last: {last}); restarts by the bot: {restarts}; "
                       "automatic mode: {mode}.",
                       "ja": "記録されたメモリ不足: {kills} 回 (最後: {last})、ボットによる再起動: {restarts} 回、自動モード: {mode}。"},
    "ticket.guard": {"en": "Guard's heartbeat: {freshness}.", "ja": "ガードのハートビート: {freshness}。"},
    "ticket.guard.fresh": {"en": "fresh", "ja": "最新"},
    "ticket.guard.stale": {"en": "stale (the VM or its guard stopped answering)",
                           "ja": "途絶 (VM またはガードが応答していません)"},
    "ticket.guard.missing": {"en": "missing (no guard, or guest attributes off)",
                             "ja": "なし (ガード未導入、またはゲスト属性が無効)"},
    "ticket.guard.unreadable": {"en": "unreadable (not the guard's shape)", "ja": "読み取れません (ガードの形式ではありません)"},
    "ticket.guard.beat": {"en": "Last beat {age} ago: server {server}, Jupyter unit {unit}, memory {memory}, "
                          "{kernels} kernels, disks {disks}.",
                          "ja": "最後の報告は {age} 前: サーバー{server}、Jupyter ユニット {unit}、メモリ {memory}、"
                          "カーネル {kernels} 個、ディスク {disks}。"},
    "ticket.guard.answering": {"en": "answering", "ja": "応答あり"},
    "ticket.guard.silent": {"en": "not answering", "ja": "応答なし"},
    "ticket.guard.cause": {"en": "Diagnosed: {cause}.", "ja": "診断: {cause}。"},
    "ticket.guard.unread": {"en": "The guard's guest attributes could not be read: {error}.",
                            "ja": "ガードのゲスト属性を読み取れませんでした: {error}。"},
    "ticket.state.open": {"en": "Open since {time}: nobody has claimed it.", "ja": "{time} から未対応です。"},
    "ticket.state.claimed": {"en": "Claimed by {who} at {time}.", "ja": "{time} に {who} が対応を開始しました。"},
    "ticket.state.resolved": {"en": "Resolved by {who} at {time}.", "ja": "{time} に {who} が解決しました。"},
    "ticket.button.claim": {"en": "I'm on it", "ja": "対応する"},
    "ticket.button.resolve": {"en": "Resolved", "ja": "解決済み"},
    "ticket.button.handover": {"en": "Hand over", "ja": "引き継ぐ"},
    "ticket.resolve.title": {"en": "Resolve the ticket", "ja": "チケットを解決"},
    "ticket.resolve.label": {"en": "A note for the participant", "ja": "参加者へのメモ"},
    "ticket.resolve.submit": {"en": "Resolve", "ja": "解決"},
    "ticket.resolve.queued": {"en": "The ticket will be resolved, and the participant sent your note.",
                              "ja": "チケットを解決し、メモを参加者に送ります。"},
    "ticket.unchanged": {"en": "Ticket *#{number}* is {state} already: nothing changed.",
                         "ja": "チケット *#{number}* はすでに {state} です。変更はありません。"},
    "ticket.unchanged.alert": {"en": "This alert is {state} already: nothing changed.",
                               "ja": "このアラートはすでに {state} です。変更はありません。"},
    "ticket.gone": {"en": "That ticket was not found in the channel: nothing changed.",
                    "ja": "チャンネルにそのチケットが見つかりません。変更はありません。"},
    "ticket.repost": {
        "en": "{group}Ticket *#{number}* from {participant} has waited {waited} and nobody has claimed it.",
        "ja": "{group}{participant} のチケット *#{number}* が {waited} 未対応のままです。",
    },
    "ticket.escalate": {
        "en": "Ticket *#{number}* from {participant} has waited {waited}, re-posted to the organizers and still "
        "unclaimed. It is in <#{channel}>.",
        "ja": "{participant} のチケット *#{number}* は運営に再通知後も {waited} 未対応です。<#{channel}> にあります。",
    },
    "ticket.remind": {
        "en": "Ticket *#{number}* you claimed has not changed for {waited}: resolve it, or hand it over.",
        "ja": "対応中のチケット *#{number}* が {waited} 更新されていません。解決するか、引き継いでください。",
    },
    # ---- an alert that needs a person (a pause) --------------------------------------------------
    "ticket.dm.alert_claimed": {"en": "An organizer, {who}, is looking at your notebook *{instance}*.",
                                "ja": "運営の {who} がノートブック *{instance}* を確認しています。"},
    "ticket.dm.alert_resolved": {"en": "{who} dealt with your notebook *{instance}*: {note}",
                                 "ja": "{who} がノートブック *{instance}* に対応しました: {note}"},
    "ticket.repost.alert": {
        "en": "{group}The alert about *{instance}* needs a person and has waited {waited} with nobody on it.",
        "ja": "{group}*{instance}* のアラートは対応が必要ですが、{waited} 誰も対応していません。",
    },
    "ticket.escalate.alert": {
        "en": "The alert about *{instance}* needs a person and has waited {waited}, re-posted to the organizers and "
        "still unclaimed. It is in <#{channel}>.",
        "ja": "*{instance}* のアラートは運営に再通知後も {waited} 未対応です。<#{channel}> にあります。",
    },
    "ticket.remind.alert": {
        "en": "The alert about *{instance}* you claimed has not changed for {waited}: resolve it, or hand it over.",
        "ja": "対応中の *{instance}* のアラートが {waited} 更新されていません。解決するか、引き継いでください。",
    },
    # ---- the organizers' Home tab ------------------------------------------------------------------
    "ticket.home.title": {"en": "*Open help tickets ({count})*", "ja": "*未解決のヘルプチケット ({count})*"},
    "ticket.home.line": {"en": "• #{number} {participant}: {what}. {who}, opened {waited} ago",
                         "ja": "• #{number} {participant}: {what}。{who}、{waited} 前から"},
    "ticket.home.nobody": {"en": "nobody on it yet", "ja": "未対応"},
    "ticket.home.unread": {"en": "_Help tickets could not be read just now: Refresh to try again._",
                           "ja": "_ヘルプチケットを読み取れませんでした。更新してください。_"},
    # ---- make report -------------------------------------------------------------------------
    "report.tickets": {"en": "Help tickets: {count} opened; alerts that needed a person taken on: {alerts}.",
                       "ja": "ヘルプチケット: {count} 件。対応が必要だったアラートへの対応: {alerts} 件。"},
    "report.tickets.took": {"en": "p50 {p50}, p90 {p90} (of {count})", "ja": "p50 {p50}、p90 {p90} ({count} 件中)"},
    "report.tickets.claim": {"en": "Time to claim: {took}", "ja": "対応開始までの時間: {took}"},
    "report.tickets.resolve": {"en": "Time to resolve: {took}", "ja": "解決までの時間: {took}"},
    "report.tickets.people": {"en": "Tickets per participant (Slack ID): {people}",
                              "ja": "参加者ごとのチケット数 (Slack ID): {people}"},
    "report.tickets.organizers": {"en": "Handled by (Slack ID, tickets): {organizers}",
                                  "ja": "対応した運営 (Slack ID、件数): {organizers}"},
    "ticket.word.open": {"en": "open", "ja": "未対応"},
    "ticket.word.claimed": {"en": "claimed", "ja": "対応中"},
    "ticket.word.resolved": {"en": "resolved", "ja": "解決済み"},
}
